/**
 * The store's ports: what pace needs from durable storage — a fixed number of shard logs — and what a store
 * promises. Every store (memory, file, Kafka) runs the one contract suite in test/contract/shard-log-contract.ts.
 * Re-exported by `ports.ts`, beside the broker's, the clock's and the logger's ports.
 */
import type { SluiceError } from './errors.js';
import type { StagedMessage } from './transactions.js';

/**
 * Messages a store publishes in the same commit as a record (see {@link Store.publishes}): readers that read
 * committed see them exactly when the record is durable, never one without the other. Under `exactlyOnce`,
 * a paced run's publishes go with its `done` record.
 *
 * @category Store
 */
export interface Alongside {
  /** The messages, in order. */
  readonly messages: readonly StagedMessage[];
  /**
   * Called, before the append resolves, when the store cannot publish them for good (a topic that does not
   * exist, a message over the broker's limit): the record is made durable without them, and the caller sends
   * them elsewhere (a dead letter). Must not throw.
   */
  readonly refused: (error: SluiceError) => void;
}

/**
 * One shard's append-only log of opaque records, numbered by LSN from 1 without gaps.
 *
 * A store promises:
 * - `append` resolves with the record's LSN only once the record is durable (on a file store: written
 *   and fdatasynced), and appends become durable in LSN order;
 * - after a crash, `replay` yields every record whose append resolved, in LSN order, each once, and
 *   nothing that was not appended; records whose append had not resolved may be there or not, but only
 *   as an unbroken prefix of what was appended;
 * - a failed fsync is fatal: the log refuses every later append (the host crashes and recovers), and
 *   an fsync is never retried.
 *
 * @category Store
 */
export interface ShardLog {
  /** The shard's number, from 0 to the store's `shards` − 1. */
  readonly shard: number;
  /**
   * Appends a record. Its LSN is fixed by the call (LSNs are given in call order: `assignedLsn()` right
   * after the call is this record's); the promise resolves with it once the record is durable. The messages
   * `alongside`, taken only by a store that {@link Store.publishes}, are published in its commit.
   */
  append(record: Uint8Array, alongside?: Alongside): Promise<number>;
  /** The LSN given to the latest `append` call, durable or not (0 before any). */
  assignedLsn(): number;
  /** The LSN of the last durable record, 0 when there is none. */
  durableLsn(): number;
  /** Calls `visit` for every durable record with LSN >= `fromLsn`, in LSN order. */
  replay(fromLsn: number, visit: (lsn: number, record: Uint8Array) => void): Promise<void>;
  /**
   * Stores a snapshot of the state that the records up to `lsn` (durable) built, replacing the previous
   * one atomically; records up to `lsn` may then be deleted. Resolves once the snapshot is durable.
   */
  writeSnapshot(lsn: number, state: Uint8Array): Promise<void>;
  /** The latest snapshot, or undefined. Replay continues from its `lsn + 1`. */
  readSnapshot(): Promise<
    | {
        /** The LSN of the last record the snapshot covers. */
        lsn: number;
        /** The snapshot's bytes, as `writeSnapshot` was given them. */
        state: Uint8Array;
      }
    | undefined
  >;
}

/**
 * Who opens a store: the app's name and its paced subscribers' names, so that a store may name what it
 * creates after them (a Kafka store without a `prefix` names its topics `<app>.<subscriber>.<purpose>`).
 *
 * @category Store
 */
export interface StoreOwner {
  /** The app's name. */
  readonly app: string;
  /** The names of the paced subscribers whose coordinators the store holds. */
  readonly subscribers: readonly string[];
}

/**
 * Durable storage for pace: a fixed number of shard logs. Open once, before use; close once, at the end.
 * Made by {@link fileStore} (the default) or {@link memoryStore} (tests), and given to an app as
 * `new App({ store })`.
 *
 * @category Store
 */
export interface Store {
  /** How many shard logs it has; a key's shard is `shardOf(key, shards)`. */
  readonly shards: number;
  /** How many records between a shard's snapshots, if the store says (its hosts' default otherwise). */
  readonly snapshotEvery?: number;
  /**
   * Who opens the store's shards. `all` (the file and memory stores): `open()` opens every shard, and one
   * process holds them all. `partition` (a Kafka store): shard p goes with partition p of a paced
   * subscriber's topic, whichever instance of the app owns it: `open()` opens none, and the app calls
   * `openShard` when its consumer is given a partition and `closeShard` when it is taken away. @default 'all'
   */
  readonly ownership?: 'all' | 'partition';
  /**
   * Whether its logs' `append(record, alongside)` publishes the messages in the record's commit (the Kafka store:
   * in the shard's transaction, on the store's cluster). An `exactlyOnce` paced subscriber needs it.
   * @default false
   */
  readonly publishes?: boolean;
  /**
   * Takes shard `shard` (a store owned by partition): whoever had it before is fenced (its pending appends
   * reject with `STORE_FENCED`, and its later ones throw it, before an LSN is given), and the log returned
   * reads back every record the previous owner's appends resolved. `log(shard)` returns it until `closeShard`.
   */
  openShard?(shard: number): Promise<ShardLog>;
  /** Lets shard `shard` go (a store owned by partition), after its pending appends settled. */
  closeShard?(shard: number): Promise<void>;
  /**
   * The topics through which `app.send` reaches the instance that owns a key's partition (a store owned by
   * partition), known once the store is open: `requests`, co-partitioned with the paced subscriber's topic
   * and read beside it by the same group member, and `replies`, which each sending instance reads. Without
   * them, `app.send` for a partition owned elsewhere is refused (`SHARD_NOT_OWNED`).
   */
  readonly routes?: {
    /** The requests topic: as many partitions as the paced subscriber's topic. */
    readonly requests: string;
    /** The replies topic. */
    readonly replies: string;
  };
  /**
   * Opens the store (the app calls it in `start()`): for a file store, takes the directory's lock and
   * recovers every shard.
   *
   * @throws {@link SluiceError} (as a rejection) `STORE_CORRUPT` when a shard cannot be recovered;
   *   `CONFIG_INVALID` when the directory was made with another shard count, or another process (or this
   *   one) has it open.
   */
  open(owner?: StoreOwner): Promise<void>;
  /**
   * The ID of the cluster that holds the store's topics (Kafka's cluster ID), once the store is open. Optional;
   * a store with `routes` that has it is checked to be on the paced subscriber's broker's cluster, where the
   * requests are read beside the subscriber's topic (`CONFIG_INVALID` otherwise).
   */
  clusterId?(): Promise<string>;
  /**
   * The log of shard `shard`.
   *
   * @throws RangeError when there is no such shard.
   */
  log(shard: number): ShardLog;
  /** Closes the store (a file store first finishes a snapshot being written) and lets its lock go. */
  close(): Promise<void>;
  /**
   * Tells `observer` of each group commit and snapshot from now on (metrics; the app calls it before
   * `open` when metrics are on). Optional; a store without it reports nothing. A later call replaces the
   * observer.
   */
  observe?(observer: StoreObserver): void;
}

/**
 * What a store reports to metrics as it makes records durable. Called on the store's own path: it must be
 * cheap and must not throw.
 *
 * @category Store
 */
export interface StoreObserver {
  /** A group commit of shard `shard` made `records` durable in `seconds` (write and fdatasync; a Kafka transaction). */
  flushed(shard: number, records: number, seconds: number): void;
  /** A snapshot of shard `shard` was written in `seconds`. */
  snapshotWritten(shard: number, seconds: number): void;
}
