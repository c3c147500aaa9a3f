import { randomUUID } from 'node:crypto';
import { SluiceError } from '../core/errors.js';
import type { Clock, Faults, Logger, ShardLog, Store, StoreOwner } from '../core/ports.js';
import type { CompiledPace } from '../pace/config.js';
import { encodeEvent } from '../pace/codec.js';
import {
  coordinatorKey,
  DONE,
  EVENT,
  opensRun,
  type PaceOutput,
  type PaceRun,
  type PaceState,
  type Receipt,
} from '../pace/rules.js';
import { runOf, splitKey } from '../pace/state.js';
import { shardOf } from '../shard/shard-of.js';
import { ShardHost } from './shard-host.js';
import { OwnedShards, checkOnePaced, type StopSignal } from './owned-shards.js';
import { rulesOf, serveInTurn } from './pace-faults.js';
import { checkKey, eventOf, tooLong, type Appended } from './pace-event.js';

export type { Appended } from './pace-event.js';

const receiptOf = (submitted: { readonly reply: unknown }): Receipt => submitted.reply as Receipt;

/** Where a paced subscriber's runs go. */
export type RunTarget = (run: PaceRun) => void;

/** The partition of `partitions` a key's message lands in (the broker's partitioner), for `app.send`. */
export type KeyPartitioner = (key: string, partitions: number) => number;

type Host = ShardHost<PaceState, PaceOutput>;

/** What metrics read of one shard of the pace stage. */
export interface ShardGauges {
  readonly shard: number;
  /** Per paced subscriber with keys in the shard (now or before). */
  readonly subscribers: readonly {
    readonly subscriber: string;
    /** Coordinators gathering a window. */
    readonly openWindows: number;
    /** Starts waiting for their key's rate (`perMinute`). */
    readonly waitingStarts: number;
  }[];
  /** Idle keys parked in the shard's table. */
  readonly parkedKeys: number;
}

/**
 * The app's pace stage: one store, one {@link ShardHost} per shard, the coordinators of every paced
 * subscriber in them. Events go in by `append` (resolving once durable, with the receipt); runs come out
 * to each subscriber's target once the record that closed their window is durable, and again after a
 * restart until their `done` record is.
 *
 * A store owned by partition (see `Store.ownership`) holds one paced subscriber's shards, shard p going
 * with partition p of its topic: this instance hosts only the shards of the partitions its consumer owns
 * ({@link OwnedShards}), and an event goes to the shard of its delivery's partition, or for `app.send` of
 * the partition the broker puts its key in.
 */
export class Pacer {
  /** One per shard of the store, made by `open` (a store that every instance opens whole). */
  private hosts: Host[] = [];
  /** The shards owned here now (a store owned by partition), made by `open`. */
  private owned: OwnedShards | undefined;
  private readonly targets = new Map<string, RunTarget>();
  private readonly partitioners = new Map<string, KeyPartitioner>();
  private opened = false;
  /** The store opened (even if a shard then failed to): close releases it. */
  private storeOpen = false;

  constructor(
    private readonly store: Store,
    private readonly paces: ReadonlyMap<string, CompiledPace>,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Called whenever an append became durable: `app.idle()` looks again. */
    private readonly onProgress: () => void,
    private readonly uuid: () => string = randomUUID,
    /** The simulator's broken behaviours (see `Faults`): none by default. */
    private readonly faults: Faults = {},
  ) {
    if (store.ownership === 'partition') checkOnePaced(paces);
  }

  /** Whether shards follow the partitions of the paced subscriber's topic (see `Store.ownership`). */
  get ownedByPartition(): boolean {
    return this.store.ownership === 'partition';
  }

  /** The topics that route `app.send` to the owner of a key's partition, if the store has them (see `Store.routes`). */
  get routes(): Store['routes'] {
    return this.ownedByPartition ? this.store.routes : undefined;
  }

  /** The ID of the cluster that holds the store's topics, if the store tells (see `Store.clusterId`). */
  clusterId(): Promise<string | undefined> {
    return this.store.clusterId?.() ?? Promise.resolve(undefined);
  }

  /** The store's shard count. */
  get shards(): number {
    return this.store.shards;
  }

  /**
   * Names the target of a subscriber's runs (and, for a store owned by partition, the partitioner that picks
   * an `app.send` key's shard); before `open`, which hands out what recovered runs still owe.
   */
  attach(subscriber: string, target: RunTarget, partitioner?: KeyPartitioner): void {
    this.targets.set(subscriber, target);
    if (partitioner) this.partitioners.set(subscriber, partitioner);
  }

  /**
   * Opens the store and recovers every shard, then lets each serve: no run leaves (to finish, and journal
   * its end) while a shard has not replayed, and every record goes to the shard of its key among all of
   * the store's shards. A shard that cannot be recovered (`STORE_CORRUPT`) closes the store again, letting
   * its lock go. A store owned by partition opens no shard here: `own` does, as partitions are assigned.
   */
  async open(owner: StoreOwner): Promise<void> {
    await this.store.open(owner);
    this.storeOpen = true;
    const rules = rulesOf(this.paces, this.faults);
    const makeHost = (shard: number, log: ShardLog): Host => this.makeHost(shard, log, rules);
    if (this.ownedByPartition) {
      const { store, log, onProgress, faults } = this;
      this.owned = new OwnedShards({ store, log, makeHost, onProgress, faults });
      this.opened = true;
      return;
    }
    const hosts = Array.from({ length: this.store.shards }, (_, shard) => makeHost(shard, this.store.log(shard)));
    this.hosts = hosts;
    if (this.faults.serveShardsInTurn) {
      this.opened = true;
      return serveInTurn(hosts);
    }
    try {
      for (const host of hosts) await host.recover();
    } catch (error) {
      await Promise.all(hosts.map((h) => h.close()));
      await this.store
        .close()
        .catch((closing: unknown) =>
          this.log.warn('pace: the store did not close after a failed recovery', { error: closing }),
        );
      this.storeOpen = false;
      throw error;
    }
    for (const host of hosts) host.serve();
    this.opened = true;
  }

  /** Partitions given to this instance: their shards are restored and served before their deliveries are read. */
  own(partitions: readonly number[]): Promise<void> {
    return this.owned?.own(partitions) ?? Promise.resolve();
  }

  /** Partitions taken away: their shards are handed over (see {@link OwnedShards}). */
  release(partitions: readonly number[], deadline: Promise<void>): Promise<void> {
    return this.owned?.release(partitions, deadline) ?? Promise.resolve();
  }

  /** Resolves once the ownership changes asked for so far are done. */
  settled(): Promise<void> {
    return this.owned?.settled() ?? Promise.resolve();
  }

  private makeHost(shard: number, log: ShardLog, rules: ReturnType<typeof rulesOf>): Host {
    return new ShardHost<PaceState, PaceOutput>({
      log,
      rules,
      clock: this.clock,
      onOutput: (out) => this.deliver(out, shard),
      // Runs that started and did not finish before the restart run again, under the same ID.
      resume: (key, state) => {
        const [subscriber, user] = splitKey(key);
        return state.running.map((r) => runOf(subscriber, user, r));
      },
      onSettled: this.onProgress,
      snapshotEvery: this.store.snapshotEvery,
      onSnapshotError: (error) =>
        this.log.warn('pace: a snapshot failed; the log is kept until the next one', { shard, error }),
      faults: this.faults,
    });
  }

  /** The partition (and shard) of `key` under a store owned by partition, as the broker puts it; else undefined. */
  partitionOf(subscriber: string, key: string): number | undefined {
    return this.owned ? this.partitioners.get(subscriber)?.(key, this.store.shards) : undefined;
  }

  /** Whether this instance owns shard `shard` now (a store owned by partition) and is not handing it over. */
  owns(shard: number): boolean {
    return this.owned?.host(shard) !== undefined;
  }

  /** The subscriber's pace settings. */
  paceOf(subscriber: string): CompiledPace | undefined {
    return this.paces.get(subscriber);
  }

  /**
   * Appends an event to its coordinator; resolves once it is durable, with the run it joined or that it was
   * dropped. `pace.order` is asked here, once: its number is journaled with the event.
   */
  append(subscriber: string, appended: Appended): Promise<Receipt> {
    try {
      return this.submit(subscriber, appended).then(receiptOf);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private submit(subscriber: string, appended: Appended): ReturnType<Host['submit']> {
    if (!this.opened) throw new SluiceError('APP_STATE', 'pace: the store is not open (start the app first)');
    checkKey(subscriber, appended.key);
    const key = coordinatorKey(subscriber, appended.key);
    const host = this.hostFor(key, subscriber, appended);
    // The record is stamped with the very time `opensRun` looked at: a clock read twice could tick between.
    // The host's time, not the clock's: the clock may read earlier than the shard's last record.
    const at = host.now();
    const pace = this.paces.get(subscriber);
    const opens = pace === undefined || opensRun(host.core.state(key), pace, at);
    const data = encodeEvent(eventOf(subscriber, pace, appended, opens ? this.uuid() : ''));
    try {
      return host.submit({ key, at: this.faults.readClockTwice ? undefined : at, type: EVENT, data });
    } catch (error) {
      throw tooLong(error, subscriber, appended.key);
    }
  }

  /**
   * Records that a run finished: it never runs again. A run of a shard this instance no longer owns is not
   * recorded (`SHARD_NOT_OWNED`): the shard's new owner runs it again, under the same ID.
   */
  async done(run: PaceRun): Promise<void> {
    if (!this.opened)
      throw new SluiceError('APP_STATE', `pace: the end of run ${run.id} cannot be recorded, the store is not open`);
    const key = coordinatorKey(run.subscriber, run.key);
    const owned = this.owned;
    try {
      const host = owned ? owned.hostOfRun(run) : this.host(key);
      if (host === undefined)
        throw new SluiceError('SHARD_NOT_OWNED', `pace: run ${run.id} ended after its shard was handed over`);
      await host.submit({ key, type: DONE, data: run.id });
    } finally {
      owned?.runEnded(run);
    }
  }

  /**
   * Whether a run may start an attempt now (see `OwnedShards.mayStart`): always, unless the store is owned by
   * partition; then a promise while the consumer is not sure the group still counts the run's partition as
   * this instance's, resolving false if the run will not start here.
   */
  mayStart(
    run: PaceRun,
    inSession: (partition: number) => true | Promise<void>,
    stop: StopSignal,
  ): boolean | Promise<boolean> {
    return this.owned?.mayStart(run, inSession, stop) ?? true;
  }

  /** A run will not finish here (abandoned at a stop or a revoke): it runs again on restart, or on the next owner. */
  letGo(run: PaceRun): void {
    this.owned?.runEnded(run);
  }

  /**
   * Whether a run handed out here is still this instance's to run: under a store owned by partition, not
   * once its shard was handed over (its next owner runs it), so that it is neither started nor retried here.
   */
  holds(run: PaceRun): boolean {
    return this.owned === undefined || this.owned.holds(run);
  }

  /**
   * Per shard hosted here: its open windows and starts waiting for their rate per subscriber, and its parked
   * keys (for metrics).
   */
  shardGauges(): ShardGauges[] {
    const hosts = this.owned ? this.owned.all() : this.hosts;
    return hosts.map((h) => ({
      shard: h.shard,
      // In the order of PACE_TALLIES.
      subscribers: [...h.core.tallies].map(([subscriber, [openWindows = 0, waitingStarts = 0]]) => ({
        subscriber,
        openWindows,
        waitingStarts,
      })),
      parkedKeys: h.core.parkedCount,
    }));
  }

  /** True when no record waits to become durable and no shard is being restored or handed over. */
  idle(): boolean {
    return this.owned ? this.owned.quiet() : this.hosts.every((h) => h.pending === 0);
  }

  /**
   * Stops the timers, waits for the appends under way (until `deadline`: a store that no longer answers
   * must not hold the stop forever) and for a snapshot being written, closes the store.
   */
  async close(deadline: Promise<void> = new Promise<void>(() => {})): Promise<void> {
    let late = false;
    void deadline.then(() => (late = true));
    if (this.owned) await Promise.race([this.owned.close(), deadline]); // a restore under way ends first
    const hosts = this.owned ? this.owned.all() : this.hosts;
    const snapshots = Promise.all(hosts.map((h) => h.close()));
    await Promise.race([Promise.all(hosts.map((h) => h.drained())), deadline]);
    // Not raced with the deadline: a snapshot writes, renames and deletes files in the store's directory,
    // and must not go on once the store is closed and its lock let go (the next owner would find its
    // segments deleted under it, or its snapshot replaced by an older one). The store's close waits for
    // its appends the same way.
    await snapshots;
    if (late)
      this.log.warn('pace: appends still under way at the shutdown timeout; what is not durable is not acknowledged');
    if (this.storeOpen) await this.store.close();
    this.storeOpen = false;
    this.opened = false;
  }

  /**
   * The host an event goes to: of a store owned by partition, the shard of the delivery's partition (or, for
   * `app.send`, of the partition the broker puts the key in), if this instance owns it now.
   */
  private hostFor(key: string, subscriber: string, appended: Appended): Host {
    if (!this.owned) return this.host(key);
    const shard = appended.source?.partition ?? this.partitioners.get(subscriber)?.(appended.key, this.store.shards);
    return this.owned.hostOfEvent(shard, subscriber, appended.key);
  }

  /** The host of a key's shard: by the store's shard count, the one a restart replays the key from. */
  private host(key: string): Host {
    if (this.faults.serveShardsInTurn) {
      const begun = this.hosts.filter((h) => h.phase !== 'new'); // by the shards opened so far
      return begun[shardOf(key, begun.length)]!;
    }
    return this.hosts[shardOf(key, this.store.shards)]!;
  }

  private readonly deliver = (out: PaceOutput, shard: number): void => {
    const { subscriber, key } = out;
    if ('dropped' in out) {
      const { at, eventId } = out;
      return this.log.info('pace: an event was dropped (over its drop rate)', { subscriber, key, at, eventId });
    }
    const run = out;
    const target = this.targets.get(subscriber);
    if (!target)
      return this.log.warn('pace: a run of a subscriber that is not mounted waits for it', {
        subscriber,
        runId: run.id,
      });
    // A shard being handed over keeps its run, recorded as started: its next owner runs it, under the same ID.
    if (this.owned && !this.owned.runLeaves(run, shard)) return;
    target(run);
  };
}
