/**
 * The ports: what the app needs from a broker, a clock and a logger, and what an adapter promises.
 * Every broker adapter (memory, Kafka) runs the one conformance suite in test/contract/.
 */
import type { Headers, InboundMessage, PublishOptions } from './message.js';
import type { InputTransactions } from './transactions.js';

/**
 * Where a broker is, as an AsyncAPI server names it.
 *
 * @category Brokers
 */
export interface BrokerServer {
  /** Its address: a Kafka cluster's bootstrap addresses, comma-separated; `localhost` in the app's process. */
  readonly host: string;
  /** Its protocol: `kafka`, `memory`. */
  readonly protocol: string;
}

/**
 * A message broker. The app calls `connect` once before anything else and `close` once at the end.
 *
 * An adapter promises:
 * - `publish` resolves once the broker has the message (durably, where the broker is durable);
 *   a message with a key lands in the partition the key picks, so one key's messages stay in order.
 *   It keeps the message exactly: key and header bytes, every value of a repeated header, a tombstone's
 *   null value; a consumer hands them out as `InboundMessage.raw` (where they are not plain text).
 * - `publish` rejects with `SluiceError` code `PUBLISH_REFUSED` when the broker refuses the message itself
 *   for good (too large, invalid), so that a caller knows that trying again cannot help; every other
 *   rejection may pass on a later try. A message pinned to a partition is never dropped in silence.
 * - `consume` joins `group` for `topic`: within a group each partition has one owner at a time and
 *   members share the partitions; every group sees every message.
 *
 * @category Brokers
 */
export interface Broker {
  /** A short name for logs: `memory`, `kafka`. */
  readonly kind: string;
  /**
   * Where the broker is, for the app's AsyncAPI document: its `host` (a Kafka cluster's bootstrap addresses,
   * comma-separated) and `protocol` (`kafka`). Optional; a broker without it is described by its `kind`.
   */
  server?(): BrokerServer;
  /**
   * Connects (the app calls it in `start()`, once per broker); a rejection fails the start.
   *
   * The app passes its logger and clock: an adapter logs through that logger (unless it was given one of its
   * own) and runs its own timers (commit intervals, restart backoff, deadlines) on that clock, so that a test
   * on a `ManualClock` drives them too. A timer paced against a deadline the broker itself keeps in real time
   * (a group session's heartbeats) may stay on the system clock. A broker connected without them (called by
   * hand) uses its own defaults; one shared by two apps uses those of the app that connected it last.
   */
  connect(app?: {
    /** The app's logger, with its name bound. */
    readonly logger: Logger;
    /** The app's clock. */
    readonly clock: Clock;
  }): Promise<void>;
  /**
   * Publishes one message: a `Uint8Array` as it is, a string as UTF-8 text, anything else as JSON
   * (`options.tombstone` sends no value). Resolves once the broker has it.
   *
   * @throws {@link SluiceError} `PUBLISH_REFUSED` (as a rejection) when the broker refuses the message for
   *   good; any other rejection may pass on a later try.
   */
  publish(topic: string, value: unknown, options?: PublishOptions): Promise<void>;
  /** Joins `request.group` as a member reading `request.topic`; resolves with the member once it has joined. */
  consume(request: ConsumeRequest): Promise<Consumer>;
  /**
   * The partition that a message with `key` lands in, of a topic with `partitions` partitions, as `publish`
   * picks it (Kafka: the Java-compatible murmur2 partitioner). Optional; a paced subscriber whose store is
   * owned by partition needs it for `app.send`.
   */
  partitionOf?(key: string, partitions: number): number;
  /** How many partitions `topic` has (Kafka asks the broker). Optional, like `partitionOf`. */
  partitionCount?(topic: string): Promise<number>;
  /**
   * The ID of the cluster the broker is part of (Kafka's cluster ID), connecting first if need be. Optional:
   * a paced subscriber whose store routes `app.send` checks that the store keeps its topics on this cluster.
   */
  clusterId?(): Promise<string>;
  /**
   * The transactions of `group` over the partitions of `topic`, for a subscriber marked `exactlyOnce`: its
   * publishes and its offsets commit together (see {@link InputTransactions}). Optional: a subscriber marked
   * so refuses to start on a broker without it.
   */
  transactions?(group: string, topic: string): InputTransactions;
  /**
   * Creates `topic` with `partitions` partitions, if it does not exist. Optional: a replay creates the topic
   * that records it this way, where the broker has it.
   */
  createTopic?(topic: string, partitions: number): Promise<void>;
  /**
   * Reads `partition` of `topic` from offset `from` on (committed messages only), calling `visit` with each in
   * offset order until it returns false or the partition's end, as it was when the read began, is reached (the
   * messages after it that came in the last fetch may be visited too); reads nothing of a topic that does not
   * exist. Optional: dead letters are shown and replayed (`app.inspectDeadLetters`,
   * `app.replayDeadLetters`) only on a broker that has it.
   */
  readTopic?(
    topic: string,
    partition: number,
    from: number,
    visit: (message: InboundMessage) => boolean,
  ): Promise<void>;
  /** Releases what `connect` opened (the app calls it last in `stop()`, after its consumers closed). */
  close(): Promise<void>;
}

/**
 * What a subscription asks of {@link Broker.consume}: the topic and group to read, and the callbacks
 * through which the consumer reports back to it.
 *
 * @category Brokers
 */
export interface ConsumeRequest {
  /** The topic to read. */
  readonly topic: string;
  /** The consumer group to join. */
  readonly group: string;
  /** Called whenever `take()` may return more than it did: new messages, new partitions, resumed. */
  onReadable(): void;
  /**
   * Partitions are being taken away (rebalance or close). Resolve once their in-flight work is
   * settled or abandoned and their watermark passed to `commit`: the adapter commits it before it
   * lets the partitions go. Messages of these partitions taken later are never handed out.
   */
  onRevoke(partitions: readonly number[]): Promise<void>;
  /**
   * Partitions were given to this member (a join or a rebalance). Optional: a consumer that has it hands out
   * nothing of these partitions until the promise resolves (heartbeating meanwhile, where the broker needs
   * it), so that what the app keeps per partition (a paced subscriber's shard) is restored first. A
   * rejection is logged, and the partitions are still handed out (the app refuses what it cannot take, and
   * those deliveries stay uncommitted).
   */
  onAssign?(partitions: readonly number[]): Promise<void>;
  /**
   * Deliveries of `partition` taken and still running or waiting for a worker (not those waiting for a
   * retry's backoff). An adapter that lets a fetched batch go only once its work is done asks this; the
   * subscription calls `settled(partition)` when it drops to 0.
   */
  active?(partition: number): number;
  /**
   * How long `close()` may wait for the broker (the final commit, leaving the group): the app's
   * `shutdownTimeoutMs`. Past it, what was not committed is delivered again.
   */
  readonly shutdownTimeoutMs?: number;
  /**
   * A group that has committed nothing yet reads `topic` from its end as it is when `consume` is called
   * (nothing published before is handed out, everything published after is), whatever the broker's own
   * default. Optional; for a group made for one instance (the replies of `app.send`).
   */
  readonly fromEnd?: boolean;
  /**
   * The group is made for this one member: once the member has left it at `close()`, the group is deleted,
   * its committed offsets with it (Kafka: `DeleteGroups`, within the close's deadline; a member that never
   * closes leaves its group to expire with the broker's `offsets.retention.minutes`). Optional; for the
   * replies of `app.send`, a group of each instance's own.
   */
  readonly forgetOnClose?: boolean;
  /**
   * A second topic the same member reads, co-partitioned with `topic` (same partition count): partition p of
   * it is always owned by the member that owns partition p of `topic`. Optional; a paced subscriber whose
   * store routes `app.send` (see `Store.routes`) reads its requests topic so. Its messages never go through
   * `take()`: once `onAssign` of the assignment settled, the consumer hands `handle` what it read of a
   * partition, a run of messages in offset order (partitions concurrently, a partition's runs one after the
   * other), and commits the first `n` of them once `handle` resolved with `n`. Those after the first `n`
   * (all of them, when `handle` rejects) stay uncommitted: they are handed again (here, or to the
   * partition's next owner), so `handle` must take a message handed twice once.
   */
  readonly requests?: {
    /** The topic: `partitionCount(topic)` partitions, like `topic`. */
    readonly topic: string;
    /**
     * Handles messages of partition `partition` (consecutive, in offset order); resolves with how many of
     * them, from the first, were handled and may be committed.
     */
    handle(partition: number, messages: readonly InboundMessage[]): Promise<number>;
  };
}

/**
 * One member of a consumer group, reading one topic. Pull-based, so that the subscription reads only
 * while it has room: nothing is fetched into the app that it did not ask for (beyond an adapter's own
 * bounded prefetch).
 *
 * An adapter promises:
 * - `take` never blocks and returns, per partition, messages in offset order, each at most once per
 *   assignment; it never returns messages of a paused or unowned partition.
 * - after a revoke, the next owner starts at the last committed offset: what was not committed is
 *   delivered again.
 * - `commit(p, o)` records that everything below offset `o` of partition `p` is done. It is cheap; the
 *   adapter sends it on its own schedule, and always in `flush()` and before a revoke completes.
 *   Commits for partitions the member no longer owns are ignored.
 *
 * @category Brokers
 */
export interface Consumer {
  /**
   * Up to `max` messages ready now, and of each partition `p` at most `perPartition(p)` (no limit without it);
   * an empty array when none are.
   */
  take(max: number, perPartition?: (partition: number) => number): readonly InboundMessage[];
  /** Messages fetched and waiting to be taken (known without asking the broker). */
  backlog(): number;
  /**
   * Messages in the broker beyond what this member has taken, over the partitions it owns (asks the
   * broker where it must). `app.idle()` uses it: 0 means everything published so far was handed out. A
   * broker that cannot answer for a moment rejects with an error marked `retriable: true`; `app.idle()` asks
   * again.
   */
  lag(): Promise<number>;
  /** The partitions this member owns now. */
  assigned(): readonly number[];
  /** Stops handing out messages of `partition` (the app's `maxUncommitted` cap was reached) until `resume`. */
  pause(partition: number): void;
  /** Hands out messages of `partition` again after `pause`. */
  resume(partition: number): void;
  /** Records that everything below `offset` of `partition` is done: the next offset the group will read. */
  commit(partition: number, offset: number): void;
  /**
   * Nothing of `partition` is running or waiting for a worker any more (what is left, if anything, waits
   * for a retry's backoff): see `ConsumeRequest.active`. Optional; cheap.
   */
  settled?(partition: number): void;
  /**
   * Whether the group's coordinator may still count `partition` as this member's: true while it is in the
   * member's assignment and not being revoked, and the coordinator answered the member (a heartbeat, a
   * join) within the session timeout, counted from when that request was sent. Otherwise a promise that
   * resolves when that may have changed: the coordinator answered again, a rebalance began, the consumer
   * closed. A member that stalled past its session (a process stopped, a long pause) may have been replaced
   * without knowing it yet: a paced run of a store owned by partition waits on this before it starts.
   * Optional: a broker without sessions keeps what it was assigned until it revokes it.
   */
  inSession?(partition: number): true | Promise<void>;
  /**
   * Per owned partition, the messages in the broker past the group's committed offset (the partition's end
   * less what the group committed; past its start where nothing was committed), for metrics and health.
   * Optional (asks the broker where it must).
   */
  partitionLags?(): Promise<readonly PartitionLag[]>;
  /**
   * How many times this member asked the broker for messages (Kafka: fetch requests begun), for health: a
   * count that stops moving says that the member has stopped polling. Optional: a consumer without a poll
   * loop of its own (the memory broker's) leaves it out, and the app looks at what it reads instead.
   */
  polls?(): number;
  /** How many assignments this member was given: its group's rebalances, the first join included. Optional. */
  assignments?(): number;
  /** Sends every pending commit. */
  flush(): Promise<void>;
  /**
   * Sends the pending commits and leaves the group, waiting for the broker until `deadline` fires (the
   * app's stop passes the deadline of its whole stop) or, without one, for the request's
   * `shutdownTimeoutMs`; nothing of the consumer goes on after that but, at most, an answer it waits for
   * from the broker.
   */
  close(deadline?: Promise<void>): Promise<void>;
}

/**
 * One partition's lag: messages in the broker past what the group committed.
 *
 * @category Brokers
 */
export interface PartitionLag {
  /** The partition. */
  readonly partition: number;
  /** The partition's end offset less the group's committed offset (0 or more). */
  readonly lag: number;
}

/**
 * A cancellable timer handle.
 *
 * @category Time and logs
 */
export interface Timer {
  /** The timer will not fire; cancelling a timer that fired or was cancelled does nothing. */
  cancel(): void;
}

/**
 * How a timer is set.
 *
 * @category Time and logs
 */
export interface TimerOptions {
  /**
   * Something the user awaits (or work the app has taken on) waits for this timer: it keeps the process
   * alive until it fires or is cancelled. Other timers do not hold the process. @default false
   */
  readonly keepAlive?: boolean;
}

/**
 * Time. The app reads time and sets timers only through this port, and hands it to the brokers it connects
 * (see {@link Broker.connect}), so tests drive time with `ManualClock` and never sleep.
 *
 * @category Time and logs
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Calls `fire` once, `delayMs` from now (any delay, even beyond 2^31 ms). A clock whose timers do not
   * involve the process (a test clock) may ignore `options`.
   */
  setTimer(delayMs: number, fire: () => void, options?: TimerOptions): Timer;
}

/**
 * Deliberately broken behaviours of the engine, for the deterministic simulator's own tests: each breaks
 * one promise, and a test asserts that the simulator's checkers catch it (a checker that cannot catch a
 * known bug would not catch an unknown one). They reach the engine only by injection, under the key
 * `Symbol.for('sluice.faults')` of the options of `new App()` and of `fileStore()`, which the public types
 * do not name; every one is off unless set there. Only the fault code reads them (`faultyPaceParts` in
 * pace-stage/pace-faults.ts, `faultyLogSteps` in store/store-faults.ts), which builds the broken part (rules,
 * a placement, a shard log, a host's hook, an event's stamp, a log's steps) the engine is then handed
 * instead of its own; the engine itself tests no fault.
 */
export interface Faults {
  /** ShardHost hands out a record's outputs as soon as it is applied, before it is durable. */
  readonly releaseEarly?: boolean;
  /** Frames are read without checking their CRC. */
  readonly skipCrc?: boolean;
  /** A new segment file is used without fsyncing its directory. */
  readonly skipDirSync?: boolean;
  /** Recovery applies each replayed record twice. */
  readonly applyTwice?: boolean;
  /** Snapshots (compaction) drop the remembered event IDs and broker offsets of pace coordinators. */
  readonly forgetIds?: boolean;
  /** Timers restored from a snapshot are dropped on restart. */
  readonly loseTimers?: boolean;
  /** Snapshots (compaction) drop the starts that wait for a pace rate. */
  readonly forgetWaiting?: boolean;
  /** Pace rates (`perMinute`, `drop`) never hold a start back. */
  readonly ignoreRates?: boolean;
  /** The pace rules start runs of a paused subscriber: a pause holds nothing. */
  readonly ignorePause?: boolean;
  /** `app.send` reads the clock twice: once to decide whether the event opens a window, once to stamp it. */
  readonly readClockTwice?: boolean;
  /**
   * The pace stage opens its shards one at a time, each handing out its runs (and firing its timers) before
   * the next has replayed, and routes records by the shards opened so far.
   */
  readonly serveShardsInTurn?: boolean;
  /**
   * A shard owned by partition is not handed over when its partition is revoked: it keeps serving (its
   * timers fire, its runs go out) beside its next owner.
   */
  readonly keepShardsOnRevoke?: boolean;
}

/** The faults injected into options (see {@link Faults}); none when the key is not set. */
export const faultsOf = (options: object): Faults =>
  (options as { [key: symbol]: Faults | undefined })[Symbol.for('sluice.faults')] ?? {};

/**
 * Severity of a log line. `silent` logs nothing.
 *
 * @category Time and logs
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/**
 * Structured fields of a log line.
 *
 * @category Time and logs
 */
export type LogFields = Readonly<Record<string, unknown>>;

/**
 * A structured logger. `child` binds fields to every line it writes.
 *
 * @category Time and logs
 */
export interface Logger {
  /** Logs a line at level `debug`, with `fields` (and the fields bound by `child`). */
  debug(message: string, fields?: LogFields): void;
  /** Logs a line at level `info`. */
  info(message: string, fields?: LogFields): void;
  /** Logs a line at level `warn`. */
  warn(message: string, fields?: LogFields): void;
  /** Logs a line at level `error`. */
  error(message: string, fields?: LogFields): void;
  /** A logger that writes to the same place with `fields` bound to every line (over this one's). */
  child(fields: LogFields): Logger;
}

export type { Headers, InboundMessage, PublishOptions };
export type { Alongside, ShardLog, Store, StoreObserver, StoreOwner } from './store-ports.js';
export type { InputTransactions, StagedMessage } from './transactions.js';
