import { within } from '../core/deadline.js';
import type { Logger, ShardLog, Store } from '../core/ports.js';
import type { PaceOutput, PaceState } from '../pace/rules.js';
import type { Appended } from './pace-event.js';
import type { RunOut } from './runs-handed-out.js';
import type { ShardHost } from './shard-host.js';

/** The host of one shard of the pace stage. */
export type PaceHost = ShardHost<PaceState, PaceOutput>;

/** A subscription's stop, as a run waiting to start sees it. */
export interface StopSignal {
  /** True once the subscription stops. */
  stopping(): boolean;
  /** Resolves when it does. */
  readonly stopped: Promise<void>;
}

/** What a {@link ShardPlacement} works with: the pace stage's store (open), and how it makes hosts. */
export interface PlacementParts {
  readonly store: Store;
  readonly log: Logger;
  /** A host for a shard's log, not yet recovered. */
  readonly makeHost: (shard: number, log: ShardLog) => PaceHost;
  /** Called when an ownership change is done: `app.idle()` looks again. */
  readonly onProgress: () => void;
  /** The partition the broker puts `key` of `subscriber` in, once the subscriber's partitioner is attached. */
  readonly partitionOf: (subscriber: string, key: string) => number | undefined;
  /** The placement closed the store (its open failed): the pace stage must not close it again. */
  readonly storeClosed: () => void;
}

/**
 * Where the pace stage's shards are placed: which shards this instance opens and serves, and so the host that
 * an event, or the end of a run, goes to. The pace stage picks one when it opens, by its store's `ownership`:
 * every shard of the store here (`AllShards`), or those of the partitions this instance's consumer owns
 * (`OwnedShards`), which come and go with the group's assignments.
 */
export interface ShardPlacement {
  /**
   * Opens what is placed here, once the store is open, and calls `serving` as soon as events and the ends of
   * runs may be taken. Rejects when a shard cannot be recovered.
   */
  open(serving: () => void): Promise<void>;
  /**
   * The host an event of `subscriber` for coordinator `key` goes to; throws `SHARD_NOT_OWNED` when its shard
   * is not served here now.
   */
  hostOfEvent(key: string, subscriber: string, appended: Appended): PaceHost;
  /** The host that records the end of `run` (of coordinator `key`), if this instance still holds its shard. */
  hostOfRun(run: RunOut, key: string): PaceHost | undefined;
  /** A run of `shard` leaves for the workers; false when it stays (recorded as started) for the shard's next owner. */
  runLeaves(run: RunOut, shard: number): boolean;
  /** `run` finished, or will not finish here. */
  runEnded(run: RunOut): void;
  /**
   * Whether `run` may start an attempt now: true, or a promise while the consumer (`inSession`) is not sure the
   * group still counts the run's partition as this instance's, resolving false if the run will not start here.
   */
  mayStart(
    run: RunOut,
    inSession: (partition: number) => true | Promise<void>,
    stop: StopSignal,
  ): boolean | Promise<boolean>;
  /** Whether `run`, as it was handed out, is still this instance's to run. */
  holds(run: RunOut): boolean;
  /** Partitions given to this instance: their shards are restored and served. */
  own(partitions: readonly number[]): Promise<void>;
  /**
   * Partitions are being taken away (a revoke began; `release` follows once their deliveries settled): from now
   * on no run of their shards starts here. Their runs out stay recorded as started, for the next owner.
   */
  revoking(partitions: readonly number[]): void;
  /** Partitions taken away: their shards are handed over (their runs out awaited until `deadline`). */
  release(partitions: readonly number[], deadline: Promise<void>): Promise<void>;
  /** Resolves once the ownership changes asked for so far are done. */
  settled(): Promise<void>;
  /** The partition (and shard) the broker puts `key` of `subscriber` in, where shards follow partitions. */
  partitionOf(subscriber: string, key: string): number | undefined;
  /** Whether this instance owns shard `shard` by partition now and is not handing it over. */
  owns(shard: number): boolean;
  /** The hosts placed here now. */
  all(): readonly PaceHost[];
  /** No record waits to become durable, and no shard is being restored or handed over. */
  quiet(): boolean;
  /**
   * Takes no more changes, then closes every host here: waits for the appends under way until `deadline`, and
   * for a snapshot being written whatever the deadline (see {@link closeHosts}).
   */
  close(deadline: Promise<void>): Promise<void>;
}

/**
 * Closes `hosts`: stops their timers, waits for their appends under way until `deadline` (a store that no
 * longer answers must not hold the stop forever), and for a snapshot being written.
 */
export async function closeHosts(hosts: readonly PaceHost[], deadline: Promise<void>): Promise<void> {
  const snapshots = Promise.all(hosts.map((h) => h.close()));
  await within(Promise.all(hosts.map((h) => h.drained())), deadline);
  // Not raced with the deadline: a snapshot writes, renames and deletes files in the store's directory,
  // and must not go on once the store is closed and its lock let go (the next owner would find its
  // segments deleted under it, or its snapshot replaced by an older one). The store's close waits for
  // its appends the same way.
  await snapshots;
}
