import type { Admin, Consumer as KafkajsConsumer, EachBatchPayload } from 'kafkajs';
import { PartitionAssigners, type Kafka } from './kafkajs.js';
import { subscriptionAwareAssigner } from './assigner.js';
import type { InboundMessage } from '../../core/message.js';
import { SystemClock } from '../../core/clock.js';
import type { Clock, ConsumeRequest, Consumer, Logger, Timer } from '../../core/ports.js';
import { heartbeating, isRebalance } from './heartbeats.js';
import { PartitionEnds } from './partition-ends.js';
import { OffsetCommits, pending } from './offset-commits.js';
import { PartitionFeed } from './partition-feed.js';

/** Consumer settings of a {@link KafkaBroker}; every field has a default. */
export interface KafkaConsumerSettings {
  /**
   * The group session timeout, in milliseconds: a member not heard from for this long is out of the group. @default
   * 30_000
   */
  sessionTimeoutMs: number;
  /**
   * How long a rebalance waits for members, in milliseconds. A member that sees a rebalance waits for its
   * revoked partitions' in-flight work (heartbeating) for at most this less one heartbeat interval, and at
   * most the app's `shutdownTimeoutMs` when that is shorter. @default 60_000
   */
  rebalanceTimeoutMs: number;
  /** How often the consumer heartbeats, in milliseconds, also while handlers run long. @default 3_000 */
  heartbeatIntervalMs: number;
  /** How long a fetch waits for data, in milliseconds. @default 1_000 */
  maxWaitTimeMs: number;
  /** How often finished offsets are committed while batches run, in milliseconds. @default 1_000 */
  commitIntervalMs: number;
  /** Where a group without committed offsets starts. @default `true` (the earliest offset) */
  fromBeginning: boolean;
  /**
   * How old metadata may grow before it is read again, in milliseconds: see `KafkaBrokerOptions.metadataMaxAgeMs`.
   * @default 30_000
   */
  metadataMaxAgeMs: number;
}

/**
 * How long after a crash the consumer joins its group again; doubled after each crash that follows, up to
 * RESTART_MAX_MS.
 */
const RESTART_MS = 1_000;
const RESTART_MAX_MS = 15_000;
/** How long a stop waits for the broker (the final commit, leaving the group) when the app does not say. */
const CLOSE_TIMEOUT_MS = 30_000;
/** While a batch is held only for the work in flight, how often the partition's end is asked for. */
const POLL_MS = 100;
/**
 * The clock of the timers paced against deadlines the broker keeps in real time — heartbeats while a batch
 * is held or a revoke waits, and the polls for newer messages meanwhile: on a test's `ManualClock` they
 * would stop, and the group would drop this member. Every other timer runs on the app's clock.
 */
const SESSION_CLOCK: Clock = new SystemClock();

/**
 * One member of a Kafka consumer group reading one topic, through kafkajs's eachBatch.
 *
 * A batch is buffered and handed out by `take()` as the app has room; its eachBatch call stays open until
 * the app has taken all of it, and after that for as long as work of the partition runs (retries waiting
 * for their backoff aside) and the broker has nothing newer, heartbeating meanwhile. That is the
 * back-pressure (kafkajs fetches a partition again only after its batch returns) and the revoke hook:
 * work in flight nearly always sits under an open eachBatch, so a rebalance is seen by our heartbeat,
 * which revokes everything — the app finishes or abandons the partitions' in-flight work and commits its
 * watermark, heartbeating on — before kafkajs rejoins the group. kafkajs has no revoke callback to wait
 * in (its issue #592): a rebalance it sees itself, in the moment between a batch returned and the next
 * fetched, makes it rejoin at once; the subscription then drops the revoked partitions' late results, and
 * their uncommitted deliveries go again to the new owner. Offsets are committed only up to what the app
 * reports finished, never for a partition not owned.
 */
export class KafkaConsumer implements Consumer {
  private consumer: KafkajsConsumer | undefined;
  private readonly feeds = new Map<number, PartitionFeed>();
  /** The feeds as an array, for take(); rebuilt when the map changes. */
  private feedList: PartitionFeed[] = [];
  private assignment = new Set<number>();
  private cursor = 0;
  private closing = false;
  private revoking: Promise<void> | undefined;
  private commitTimer: Timer | undefined;
  private restartTimer: Timer | undefined;
  /** kafkajs's run() under way: joining the group (at start, or after a crash). */
  private starting: Promise<void> | undefined;
  /** Crashes since a batch last arrived: how long the next restart waits. */
  private crashes = 0;
  private closed: Promise<void> | undefined;
  /** What the broker holds beyond this member's batches: when a batch held for running work lets go. */
  private readonly ends: PartitionEnds;
  private readonly commits: OffsetCommits;

  constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly request: ConsumeRequest,
    private readonly settings: KafkaConsumerSettings,
    private readonly log: Logger,
    /** The app's clock: the commit interval, the backoff of crash restarts, the close deadline. */
    private readonly clock: Clock,
  ) {
    this.ends = new PartitionEnds(admin, request.topic, request.group, settings.fromBeginning, log);
    const due = (): PartitionFeed[] =>
      [...this.feeds.values()].filter((f) => !f.lost && this.assignment.has(f.partition));
    this.commits = new OffsetCommits(request.topic, log, due, () => this.consumer);
  }

  /** Joins the group; resolves once the first assignment arrived. */
  async start(): Promise<void> {
    const s = this.settings;
    const consumer = (this.consumer = this.kafka.consumer({
      groupId: this.request.group,
      sessionTimeout: s.sessionTimeoutMs,
      rebalanceTimeout: s.rebalanceTimeoutMs,
      heartbeatInterval: s.heartbeatIntervalMs,
      maxWaitTimeInMs: s.maxWaitTimeMs,
      metadataMaxAge: s.metadataMaxAgeMs,
      allowAutoTopicCreation: false, // topics are created by KafkaBroker's createTopics, where the user allows it
      // Ours first; kafkajs's round-robin too, so plain kafkajs members can share the group.
      partitionAssigners: [subscriptionAwareAssigner, PartitionAssigners.roundRobin],
      // kafkajs never restarts the consumer itself: Sluice does (restartAfterCrash), so that it backs off, and
      // so that a stop knows whether a join is under way (kafkajs's disconnect does nothing to a restart's).
      retry: { restartOnFailure: async () => false },
    }));
    const joined = new Promise<void>((resolve) => {
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        this.onJoin(e.payload.memberAssignment[this.request.topic] ?? []);
        resolve();
      });
    });
    // kafkajs is about to rejoin (a heartbeat outside our batches saw the rebalance): stop handing out.
    consumer.on(
      consumer.events.REBALANCING,
      () => void this.revokeAll().catch((error) => this.log.warn('revoke failed', { error })),
    );
    consumer.on(consumer.events.CRASH, (e) => this.crashed(e.payload.error));
    this.commits.watch(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic: this.request.topic, fromBeginning: s.fromBeginning });
    await this.run();
    await joined;
    this.commitEvery(s.commitIntervalMs);
  }

  /** Sends the pending commits every `ms` on the app's clock, until the consumer closes. */
  private commitEvery(ms: number): void {
    this.commitTimer = this.clock.setTimer(ms, () => {
      if (this.closing) return;
      this.commitEvery(ms);
      void this.flush().catch(() => {});
    });
  }

  /** kafkajs's run(): joins the group and reads; resolves once joined, or once a failed join crashed. */
  private run(): Promise<void> {
    const starting = this.consumer!.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1024,
      eachBatch: (payload) => this.eachBatch(payload),
    });
    const done = (): void => void (this.starting === starting && (this.starting = undefined));
    starting.then(done, done);
    return (this.starting = starting);
  }

  /**
   * kafkajs gave up on the consumer (it has disconnected and left the group, or been dropped). The first
   * crash of a row is an error; the ones that follow before a batch arrives again are warnings, each
   * waiting twice as long as the one before (up to RESTART_MAX_MS), so a lasting fault (the broker down,
   * the topic deleted) is neither a busy loop nor a flood of logs.
   */
  private crashed(error: Error): void {
    if (this.closing) return this.log.debug('kafka consumer crashed while closing', { error });
    const delayMs = Math.min(RESTART_MAX_MS, RESTART_MS * 2 ** Math.min(this.crashes, 10));
    this.crashes++;
    const missing =
      (error as { type?: string }).type === 'UNKNOWN_TOPIC_OR_PARTITION' ||
      /does not host this topic-partition/.test(error.message);
    const fields = {
      group: this.request.group,
      topic: this.request.topic,
      crashes: this.crashes,
      restartInMs: delayMs,
      ...(missing ? { hint: `does topic "${this.request.topic}" exist? (deleted?)` } : {}),
    };
    if (this.crashes === 1) this.log.error('kafka consumer crashed', { ...fields, error });
    else this.log.warn('kafka consumer crashed again', { ...fields, error: error.message });
    this.restartAfterCrash(delayMs);
  }

  /**
   * Revokes what the crashed consumer held — the app settles or abandons that work; what it finished and
   * could not commit is remembered (see {@link OffsetCommits}) — then joins again after `delayMs`.
   */
  private restartAfterCrash(delayMs: number): void {
    if (this.closing) return;
    void this.revokeAll()
      .catch((error: unknown) => this.log.warn('revoke failed', { error }))
      .then(() => {
        if (this.closing) return;
        this.restartTimer?.cancel();
        // Held (keepAlive): the consumer's connections, which held the process, are gone until it restarts.
        const restart = (): void => {
          if (this.closing) return;
          this.log.debug('kafka consumer restarting after a crash', {
            group: this.request.group,
            topic: this.request.topic,
          });
          // A failed join crashes (the CRASH event schedules the next try); run() rejects only on a fault of its own.
          this.run().catch((error: unknown) => this.crashed(error instanceof Error ? error : new Error(String(error))));
        };
        this.restartTimer = this.clock.setTimer(delayMs, restart, { keepAlive: true });
      });
  }

  take(max: number): readonly InboundMessage[] {
    // Drain one partition's batch before moving to the next: its eachBatch returns sooner, so kafkajs
    // fetches that partition again while the others' batches are still being worked on — when they are led
    // by other brokers (kafkajs fetches from a broker again once every batch of its last fetch returned).
    const out: InboundMessage[] = [];
    const feeds = this.feedList;
    const n = feeds.length;
    for (let k = 0; k < n && out.length < max; k++) {
      const feed = feeds[(this.cursor + k) % n]!;
      if (feed.paused || feed.revoked) continue;
      feed.takeInto(out, max - out.length);
      if (out.length === max) {
        this.cursor = (this.cursor + k) % n;
        return out;
      }
    }
    this.cursor = n > 0 ? (this.cursor + 1) % n : 0;
    return out;
  }

  backlog(): number {
    let waiting = 0;
    for (const f of this.feeds.values()) if (!f.revoked) waiting += f.buffered();
    return waiting;
  }

  async lag(): Promise<number> {
    if (this.assignment.size === 0 || this.closing) return 0;
    const [ends, committed] = await Promise.all([
      this.admin.fetchTopicOffsets(this.request.topic),
      this.admin.fetchOffsets({ groupId: this.request.group, topics: [this.request.topic] }),
    ]);
    const committedOf = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    let lag = 0;
    for (const end of ends) {
      if (!this.assignment.has(end.partition)) continue;
      const c = committedOf.get(end.partition) ?? -1;
      const position = this.feeds.get(end.partition)?.position ?? (c >= 0 ? c : Number(end.low));
      lag += Math.max(0, Number(end.high) - position);
    }
    return lag;
  }

  assigned(): readonly number[] {
    return [...this.assignment];
  }

  pause(partition: number): void {
    const f = this.feeds.get(partition);
    if (f) f.paused = true;
  }

  resume(partition: number): void {
    const f = this.feeds.get(partition);
    if (f?.paused) {
      f.paused = false;
      this.request.onReadable();
    }
  }

  commit(partition: number, offset: number): void {
    const f = this.feeds.get(partition);
    // Of a partition owned and read (or being revoked): committed. Otherwise (a partition taken away before
    // the app's revoke reported it) it is only remembered: everything below was finished here.
    if (
      f !== undefined &&
      (f.revoked || (this.assignment.has(partition) && f.readFrom !== undefined && offset >= f.readFrom))
    )
      f.markCommittable(offset);
    else this.commits.remember(partition, offset);
  }

  /** A feed leaves: what it finished and did not commit is remembered. */
  private drop(f: PartitionFeed): void {
    if (this.feeds.get(f.partition) === f) this.feeds.delete(f.partition);
    this.commits.left(f);
  }

  settled(partition: number): void {
    this.feeds.get(partition)?.settled();
  }

  /** Sends every pending commit of the partitions owned (see {@link OffsetCommits}). */
  flush(): Promise<void> {
    return this.commits.flush();
  }

  /**
   * Commits what finished and leaves the group, waiting for the broker until `deadline` (the app's stop
   * passes the deadline of its whole stop), or without one at most the app's shutdown timeout: past it,
   * commits not taken are abandoned (their deliveries come again) and leaving goes on in the background.
   * A join under way (kafkajs's disconnect does nothing to one) is waited for, then left.
   */
  close(deadline?: Promise<void>): Promise<void> {
    return (this.closed ??= this.shutDown(deadline));
  }

  private async shutDown(deadline: Promise<void> | undefined): Promise<void> {
    this.closing = true;
    this.commitTimer?.cancel();
    this.restartTimer?.cancel();
    for (const f of this.feeds.values()) f.wake();
    let timer: Timer | undefined;
    const timeoutMs = this.request.shutdownTimeoutMs ?? CLOSE_TIMEOUT_MS;
    const timedOut = deadline
      ? deadline.then(() => false as const)
      : new Promise<false>(
          (resolve) => (timer = this.clock.setTimer(timeoutMs, () => resolve(false), { keepAlive: true })),
        );
    const within = (work: Promise<unknown>): Promise<boolean> => Promise.race([work.then(() => true), timedOut]);
    try {
      if (!(await within(this.flush().catch((error: unknown) => this.log.warn('final commit failed', { error })))))
        this.log.warn('final commit: the broker did not answer within the shutdown timeout', { timeoutMs });
      const unsent = [...this.feeds.values()]
        .filter(pending)
        .map((f) => ({ partition: f.partition, offset: f.committable }));
      if (unsent.length > 0)
        this.log.warn(
          'final commit failed: these offsets were not committed; what is above them will be delivered again',
          { offsets: unsent },
        );
      const consumer = this.consumer;
      const leave = (this.starting ?? Promise.resolve()).catch(() => {}).then(() => consumer?.disconnect());
      const left = leave.catch((error: unknown) => this.log.warn('leaving the group failed', { error }));
      if (!(await within(left)))
        this.log.warn(
          'leaving the group: the broker did not answer within the shutdown timeout; it goes on in the background',
          { timeoutMs },
        );
    } finally {
      timer?.cancel();
      this.feeds.clear();
      this.feedList = [];
      this.assignment.clear();
    }
  }

  // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs's payload functions are closures
  private async eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const p = batch.partition;
    // A partition given back to this member while its revoke still runs: wait for the revoke, then read anew.
    while (this.feeds.get(p)?.revoked && this.revoking) await this.revoking.catch(() => {});
    if (this.closing || !this.assignment.has(p)) return;
    let feed = this.feeds.get(p);
    if (!feed) {
      this.feeds.set(p, (feed = new PartitionFeed(this.request.topic, p, SESSION_CLOCK)));
      this.feedList = [...this.feeds.values()];
      feed.skipBelow = this.commits.takeFinished(p);
    }
    if (feed.revoked) return;
    this.crashes = 0; // kafkajs reads again
    // kafkajs's messages as they are: the feed wraps each one only when the app takes it.
    const messages = feed.admit(batch.messages, Number(batch.lastOffset()));
    this.ends.seen(p, Number(batch.highWatermark));
    if (messages.length === 0) {
      feed.fetchedEnd = Number(batch.lastOffset()) + 1;
      await this.beat(heartbeat);
      resolveOffset(batch.lastOffset()); // only control records, or what was finished before
      return;
    }
    const end = Number(messages[messages.length - 1]!.offset) + 1;
    feed.fetchedEnd = end;
    feed.append(messages);
    this.request.onReadable();
    // Hold the batch until the app has taken all of it: kafkajs fetches this partition again only after, so
    // nothing is read beyond what the app has room for (one batch of read-ahead per partition). Once taken,
    // it is still held while work of the partition runs and the broker has nothing newer in any partition
    // (kafkajs fetches again from a broker only once all its batches returned; the ends are asked for every
    // POLL_MS): so that work in flight has an open eachBatch whose heartbeat sees a rebalance before kafkajs
    // rejoins, and yet newer messages are fetched at once.
    const active = this.request.active?.bind(this.request);
    const taken = (): boolean => (feed.position ?? -1) >= end;
    const busy = (): boolean => !taken() || (active !== undefined && active(p) > 0 && !this.newer());
    while (!this.closing && !feed.revoked && isRunning() && !isStale() && busy()) {
      const caughtUp = taken();
      await feed.until(
        end,
        caughtUp ? Math.min(POLL_MS, this.settings.heartbeatIntervalMs) : this.settings.heartbeatIntervalMs,
      );
      if (caughtUp && busy()) await this.refreshEnds();
      if (!busy()) break;
      await this.beat(heartbeat);
    }
    if (this.closing || feed.revoked || isStale()) return;
    await this.beat(heartbeat);
    resolveOffset(batch.lastOffset());
  }

  /**
   * Heartbeats (when one is due: kafkajs sends at most one per interval) while a batch is held and as it
   * returns, so that kafkajs's own heartbeat right after finds one just sent and does not look: a rebalance
   * is seen here, where the revoke is waited for, and not by kafkajs, which would rejoin at once while work
   * still runs. Then it revokes everything and throws the rebalance to kafkajs, which rejoins.
   */
  private async beat(heartbeat: () => Promise<void>): Promise<void> {
    try {
      await heartbeat();
    } catch (error) {
      // A heartbeat that failed otherwise (a slow coordinator, a timeout) is tried again next round; throwing
      // it would make kafkajs retry the whole batch with backoff, or crash the consumer.
      if (!isRebalance(error)) return this.log.debug('heartbeat failed', { error });
      await heartbeating(this.revokeAll(), heartbeat, this.settings, this.log, SESSION_CLOCK);
      throw error;
    }
  }

  /** True when an owned partition has messages that no batch brought yet. */
  private newer(): boolean {
    return this.ends.newer(this.assignment, (q) => this.feeds.get(q)?.fetchedEnd);
  }

  /** Asks the broker how far the partitions go (and, for those no batch came from, where they are read from). */
  private refreshEnds(): Promise<void> {
    return this.ends.refresh([...this.assignment].some((q) => this.feeds.get(q)?.fetchedEnd === undefined));
  }

  /**
   * A rebalance is coming (eager: every partition goes): stop handing out, let the app settle its
   * in-flight work and commit, send the commits while still a member of this generation, let go.
   */
  private revokeAll(): Promise<void> {
    const revoked = [...this.feeds.values()].filter((f) => !f.revoked);
    if (revoked.length === 0) return this.revoking ?? Promise.resolve();
    return this.revokeFeeds(revoked);
  }

  /**
   * Stops handing out `revoked`, lets the app settle their work (after any revoke under way), sends the
   * commits, lets them go. A feed leaves only then, so that a partition given back meanwhile waits for it.
   */
  private revokeFeeds(revoked: PartitionFeed[]): Promise<void> {
    for (const f of revoked) {
      f.revoked = true;
      f.clear();
      f.wake();
    }
    const previous = (this.revoking ?? Promise.resolve()).catch(() => {});
    const revoking = previous.then(async () => {
      try {
        await this.request.onRevoke(revoked.map((f) => f.partition));
        await this.flush();
      } finally {
        for (const f of revoked) this.drop(f);
        this.feedList = [...this.feeds.values()];
      }
    });
    // Cleared once it settles (not inside it: a revoke that finished at once would clear before being set).
    const clear = (): void => void (this.revoking === revoking && (this.revoking = undefined));
    revoking.then(clear, clear);
    return (this.revoking = revoking);
  }

  private onJoin(partitions: readonly number[]): void {
    if (this.closing) return;
    // Partitions still held here were revoked without a heartbeat telling us first: the app drops them
    // (their uncommitted work is delivered again to whoever owns them now, unless they come back here).
    // Their feeds stay (revoked, and not committed: another member may have moved on) until the app has
    // reported what it finished, which is remembered; a partition back here is read again only after that.
    const stale = [...this.feeds.values()].filter((f) => !f.revoked);
    for (const f of stale) f.lost = true;
    this.assignment = new Set(partitions);
    this.ends.reset();
    if (stale.length > 0)
      void this.revokeFeeds(stale).catch((error: unknown) => this.log.warn('revoke failed', { error }));
    this.log.debug('kafka assignment', {
      group: this.request.group,
      topic: this.request.topic,
      partitions,
      stale: stale.map((f) => f.partition),
    });
  }
}
