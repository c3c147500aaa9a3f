import { randomUUID } from 'node:crypto';
import { SluiceError } from '../core/errors.js';
import type { Alongside, Clock, Logger, ShardLog, Store, StoreOwner } from '../core/ports.js';
import type { CompiledPace } from '../pace/config.js';
import { EVENT_FIELD, encodeEvent } from '../pace/codec.js';
import {
  coordinatorKey,
  DONE,
  EVENT,
  opensRun,
  paceRules,
  type PaceOutput,
  type PaceRun,
  type PaceState,
  type Receipt,
} from '../pace/rules.js';
import { runOf, splitKey } from '../pace/state.js';
import type { Rules, ShardRecord } from '../shard/rules.js';
import { AllShards } from './all-shards.js';
import { ShardHost } from './shard-host.js';
import { encodeRecordWithText } from './journal-record.js';
import { OwnedShards, checkOnePaced } from './owned-shards.js';
import { checkKey, eventOf, tooLong, type Appended } from './pace-event.js';
import type { PaceParts } from './pace-parts.js';
import { InputGate } from './input-gate.js';
import { gaugesOf, type ShardGauges } from './shard-gauges.js';
import { PaceControl } from './pace-control.js';
import type { PaceHost as Host, PlacementParts, ShardPlacement, StopSignal } from './shard-placement.js';

export type { Appended } from './pace-event.js';
export type { ShardGauges } from './shard-gauges.js';

const receiptOf = (submitted: { readonly reply: unknown }): Receipt => submitted.reply as Receipt;

/** Tells `joined` of `receipt`; a throw there is ignored (the append goes on). */
function tellSafely(joined: (receipt: Receipt) => void, receipt: Receipt): void {
  try {
    joined(receipt);
  } catch {
    // telemetry: an event is journaled whatever its links do
  }
}

/** Messages a subscriber's consumer has not taken yet, or undefined while it cannot say (not joined, no broker). */
export type InputLag = () => Promise<number | undefined>;

/** Where a paced subscriber's runs go. */
export type RunTarget = (run: PaceRun) => void;

/** The partition of `partitions` a key's message lands in (the broker's partitioner), for `app.send`. */
export type KeyPartitioner = (key: string, partitions: number) => number;

/**
 * The app's pace stage: one store, one {@link ShardHost} per shard, the coordinators of every paced
 * subscriber in them. Events go in by `append` (resolving once durable, with the receipt); runs come out
 * to each subscriber's target once the record that closed their window is durable, and again after a
 * restart until their `done` record is.
 *
 * Where the shards are is the {@link ShardPlacement} picked at `open`: every shard of the store here
 * ({@link AllShards}), or, for a store owned by partition (see `Store.ownership`), which holds one paced
 * subscriber's shards, shard p going with partition p of its topic, only the shards of the partitions this
 * instance's consumer owns ({@link OwnedShards}); an event then goes to the shard of its delivery's
 * partition, or for `app.send` of the partition the broker puts its key in.
 */
export class Pacer {
  /** Where the shards are, and their hosts: made by `open`. */
  private placement: ShardPlacement | undefined;
  private readonly targets = new Map<string, RunTarget>();
  private readonly partitioners = new Map<string, KeyPartitioner>();
  private readonly lags: InputLag[] = [];
  /** Each host's gate (see {@link InputGate}), told of the deliveries appended to it. */
  private readonly gates = new WeakMap<Host, InputGate>();
  private opened = false;
  /** The store opened (even if a shard then failed to): close releases it. */
  private storeOpen = false;
  /** Pause, resume, cancel and inspection of what the shards hosted here hold. */
  readonly control: PaceControl;

  constructor(
    private readonly store: Store,
    private readonly paces: ReadonlyMap<string, CompiledPace>,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Called whenever an append became durable: `app.idle()` looks again. */
    private readonly onProgress: () => void,
    private readonly uuid: () => string = randomUUID,
    /** Parts handed in instead of the pace stage's own (the simulator's broken engines): none by default. */
    private readonly parts: PaceParts = {},
  ) {
    if (store.ownership === 'partition') checkOnePaced(paces);
    this.control = new PaceControl(() => (this.opened ? this.placement : undefined), paces, log, onProgress);
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

  /** Whether the store publishes a run's messages with its `done` record (see `Store.publishes`). */
  get publishes(): boolean {
    return this.store.publishes === true;
  }

  /** The store's shard count. */
  get shards(): number {
    return this.store.shards;
  }

  /**
   * Names the target of a subscriber's runs (and, for a store owned by partition, the partitioner that picks
   * an `app.send` key's shard); before `open`, which hands out what recovered runs still owe.
   */
  attach(subscriber: string, target: RunTarget, partitioner?: KeyPartitioner, lag?: InputLag): void {
    this.targets.set(subscriber, target);
    if (partitioner) this.partitioners.set(subscriber, partitioner);
    if (lag) this.lags.push(lag);
  }

  /** What the subscribers' consumers have not taken yet (undefined while one cannot say). */
  private async inputLag(): Promise<number | undefined> {
    const lags = await Promise.all(this.lags.map((l) => l()));
    return lags.some((l) => l === undefined) ? undefined : lags.reduce<number>((a, l) => a + l!, 0);
  }

  /**
   * Opens the store and places its shards: a store opened whole recovers every shard, then lets each serve
   * ({@link AllShards}); a store owned by partition opens no shard here: `own` does, as partitions are
   * assigned ({@link OwnedShards}).
   */
  async open(owner: StoreOwner): Promise<void> {
    await this.store.open(owner);
    this.storeOpen = true;
    const { store, log, onProgress, parts } = this;
    const rules = (parts.rules ?? paceRules)(this.paces);
    const shardLog = parts.shardLog ?? ((l: ShardLog) => l);
    const placed: PlacementParts = {
      store,
      log,
      makeHost: (shard, l) => this.makeHost(shard, shardLog(l), rules),
      onProgress,
      partitionOf: (subscriber, key) => this.partitioners.get(subscriber)?.(key, store.shards),
      storeClosed: () => (this.storeOpen = false),
    };
    const placement = this.ownedByPartition
      ? (parts.ownedShards ?? ((p) => new OwnedShards(p)))(placed)
      : (parts.allShards ?? ((p) => new AllShards(p)))(placed);
    this.placement = placement;
    await placement.open(() => (this.opened = true));
  }

  /** Partitions given to this instance: their shards are restored and served before their deliveries are read. */
  own(partitions: readonly number[]): Promise<void> {
    return this.placement?.own(partitions) ?? Promise.resolve();
  }

  /** A revoke of `partitions` began: no run of their shards starts here from now on (see {@link OwnedShards}). */
  revoking(partitions: readonly number[]): void {
    this.placement?.revoking(partitions);
  }

  /** Partitions taken away: their shards are handed over (see {@link OwnedShards}). */
  release(partitions: readonly number[], deadline: Promise<void>): Promise<void> {
    return this.placement?.release(partitions, deadline) ?? Promise.resolve();
  }

  /** Resolves once the ownership changes asked for so far are done. */
  settled(): Promise<void> {
    return this.placement?.settled() ?? Promise.resolve();
  }

  private makeHost(shard: number, log: ShardLog, rules: Rules<PaceState, PaceOutput>): Host {
    // A shard owned by partition is taken over: its timers wait until its backlog is read.
    const gate = new InputGate(this.clock, () => this.inputLag(), this.ownedByPartition);
    const host = new ShardHost<PaceState, PaceOutput>({
      gate,
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
      onApplied: this.parts.onApplied,
      onServe: () => this.control.served(host),
    });
    this.gates.set(host, gate);
    return host;
  }

  /** The partition (and shard) of `key` under a store owned by partition, as the broker puts it; else undefined. */
  partitionOf(subscriber: string, key: string): number | undefined {
    return this.placement?.partitionOf(subscriber, key);
  }

  /** Whether this instance owns shard `shard` now (a store owned by partition) and is not handing it over. */
  owns(shard: number): boolean {
    return this.placement?.owns(shard) ?? false;
  }

  /** The subscriber's pace settings. */
  paceOf(subscriber: string): CompiledPace | undefined {
    return this.paces.get(subscriber);
  }

  /**
   * Appends an event to its coordinator; resolves once it is durable, with the run it joined or that it was
   * dropped. `pace.order` is asked here, once: its number is journaled with the event. `joined` is told the
   * receipt as soon as the event is applied, before the run it starts (or whose window it closes) leaves:
   * where a run's span learns its links. Being telemetry, what it throws is ignored.
   */
  append(subscriber: string, appended: Appended, joined?: (receipt: Receipt) => void): Promise<Receipt> {
    try {
      return this.submit(subscriber, appended, joined).then(receiptOf);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private submit(
    subscriber: string,
    appended: Appended,
    joined: ((receipt: Receipt) => void) | undefined,
  ): ReturnType<Host['submit']> {
    const placement = this.opened ? this.placement : undefined;
    if (!placement) throw new SluiceError('APP_STATE', 'pace: the store is not open (start the app first)');
    checkKey(subscriber, appended.key);
    const key = coordinatorKey(subscriber, appended.key);
    const host = placement.hostOfEvent(key, subscriber, appended);
    // The record is stamped with the very time `opensRun` looked at: a clock read twice could tick between.
    // The host's time, not the clock's: the clock may read earlier than the shard's last record.
    const at = host.now();
    // While its shard is held (see InputGate), a delivery falls among windows at the time the broker appended
    // it (never later than the shard's time).
    const sent = appended.source?.timestamp;
    const gate = sent === undefined ? undefined : this.gates.get(host);
    gate?.input(Math.min(sent!, at), at);
    const time = gate?.held === true && sent! < at ? sent : undefined;
    const pace = this.paces.get(subscriber);
    const opens = pace === undefined || opensRun(host.core.state(key), pace, time ?? at);
    const e = eventOf(subscriber, pace, appended, opens ? this.uuid() : '', time);
    const json = appended.json;
    // A payload decoded as JSON is journaled as it came: its value is not encoded again.
    const encode = json && ((r: ShardRecord) => encodeRecordWithText(r, encodeEvent(e, false), EVENT_FIELD, json));
    try {
      const told = joined && ((reply: unknown) => tellSafely(joined, reply as Receipt));
      const record = { key, at: this.parts.stamp ? this.parts.stamp(at) : at, type: EVENT, data: encodeEvent(e) };
      return host.submit(record, told, undefined, encode);
    } catch (error) {
      throw tooLong(error, subscriber, appended.key);
    }
  }

  /**
   * Records that a run finished: it never runs again. A run of a shard this instance no longer owns is not
   * recorded (`SHARD_NOT_OWNED`): the shard's new owner runs it again, under the same ID. Under
   * `exactlyOnce`, `alongside` holds what the run published: the store publishes it with the `done` record.
   */
  async done(run: PaceRun, alongside?: Alongside): Promise<void> {
    const placement = this.opened ? this.placement : undefined;
    if (!placement)
      throw new SluiceError('APP_STATE', `pace: the end of run ${run.id} cannot be recorded, the store is not open`);
    const key = coordinatorKey(run.subscriber, run.key);
    try {
      const host = placement.hostOfRun(run, key);
      if (host === undefined)
        throw new SluiceError('SHARD_NOT_OWNED', `pace: run ${run.id} ended after its shard was handed over`);
      await host.submit({ key, type: DONE, data: run.id }, undefined, alongside);
    } finally {
      placement.runEnded(run);
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
    return this.placement?.mayStart(run, inSession, stop) ?? true;
  }

  /** A run will not finish here (abandoned at a stop or a revoke): it runs again on restart, or on the next owner. */
  letGo(run: PaceRun): void {
    this.placement?.runEnded(run);
  }

  /**
   * Whether a run handed out here is still this instance's to run: under a store owned by partition, not
   * once its shard was handed over (its next owner runs it), so that it is neither started nor retried here.
   */
  holds(run: PaceRun): boolean {
    return this.placement?.holds(run) ?? true;
  }

  /**
   * Per shard hosted here: its open windows and starts waiting for their rate per subscriber, and its parked
   * keys (for metrics).
   */
  shardGauges(): ShardGauges[] {
    return (this.placement?.all() ?? []).map(gaugesOf);
  }

  /** True when no record waits to become durable and no shard is being restored or handed over. */
  idle(): boolean {
    return (this.placement?.quiet() ?? true) && this.control.quiet;
  }

  /**
   * Stops the timers, waits for the appends under way (until `deadline`: a store that no longer answers
   * must not hold the stop forever) and for a snapshot being written, closes the store.
   */
  async close(deadline: Promise<void> = new Promise<void>(() => {})): Promise<void> {
    let late = false;
    void deadline.then(() => (late = true));
    await this.placement?.close(deadline);
    if (late)
      this.log.warn('pace: appends still under way at the shutdown timeout; what is not durable is not acknowledged');
    if (this.storeOpen) await this.store.close();
    this.storeOpen = false;
    this.opened = false;
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
    if (this.placement?.runLeaves(run, shard) === false) return;
    target(run);
  };
}
