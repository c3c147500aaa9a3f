import { randomUUID } from 'node:crypto';
import { SluiceError, reasonOf, show } from '../core/errors.js';
import type { Clock, Faults, Logger, Store } from '../core/ports.js';
import { MAX_KEY_BYTES, type CompiledPace } from '../pace/config.js';
import { encodeEvent } from '../pace/codec.js';
import { withoutIds } from '../pace/ids.js';
import { jsonValue } from '../pace/json-value.js';
import {
  coordinatorKey,
  DONE,
  EVENT,
  opensRun,
  paceRules,
  type PaceEvent,
  type PaceOutput,
  type PaceRun,
  type PaceState,
  type Receipt,
} from '../pace/rules.js';
import { runOf, splitKey } from '../pace/state.js';
import { shardOf } from '../shard/shard-of.js';
import { ShardHost } from '../store/shard-host.js';

const receiptOf = (submitted: { readonly reply: unknown }): Receipt => submitted.reply as Receipt;

/** Where a paced subscriber's runs go. */
export type RunTarget = (run: PaceRun) => void;

/**
 * An event to append to a coordinator: from `app.send` (an optional ID) or from a broker delivery (its
 * source and offset).
 */
export interface Appended {
  readonly key: string;
  readonly event: unknown;
  readonly eventId?: string;
  readonly source?: { readonly topic: string; readonly partition: number; readonly offset: number };
}

/**
 * The app's pace stage: one store, one {@link ShardHost} per shard, the coordinators of every paced
 * subscriber in them. Events go in by `append` (resolving once durable, with the receipt); runs come out
 * to each subscriber's target once the record that closed their window is durable, and again after a
 * restart until their `done` record is.
 */
export class Pacer {
  /** One per shard of the store, made by `open`. */
  private hosts: ShardHost<PaceState, PaceOutput>[] = [];
  private readonly targets = new Map<string, RunTarget>();
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
  ) {}

  /** Names the target of a subscriber's runs; before `open`, which hands out what recovered runs still owe. */
  attach(subscriber: string, target: RunTarget): void {
    this.targets.set(subscriber, target);
  }

  /**
   * Opens the store and recovers every shard, then lets each serve: no run leaves (to finish, and journal
   * its end) while a shard has not replayed, and every record goes to the shard of its key among all of
   * the store's shards. A shard that cannot be recovered (`STORE_CORRUPT`) closes the store again, letting
   * its lock go.
   */
  async open(): Promise<void> {
    await this.store.open();
    this.storeOpen = true;
    const rules = this.faulty(paceRules(this.faults.ignoreRates ? withoutRates(this.paces) : this.paces));
    this.hosts = Array.from({ length: this.store.shards }, (_, shard) => this.makeHost(shard, rules));
    if (this.faults.serveShardsInTurn) return this.openInTurn();
    try {
      for (const host of this.hosts) await host.recover();
    } catch (error) {
      await Promise.all(this.hosts.map((h) => h.close()));
      await this.store
        .close()
        .catch((closing: unknown) =>
          this.log.warn('pace: the store did not close after a failed recovery', { error: closing }),
        );
      this.storeOpen = false;
      throw error;
    }
    for (const host of this.hosts) host.serve();
    this.opened = true;
  }

  private makeHost(shard: number, rules: ReturnType<typeof paceRules>): ShardHost<PaceState, PaceOutput> {
    return new ShardHost<PaceState, PaceOutput>({
      log: this.store.log(shard),
      rules,
      clock: this.clock,
      onOutput: this.deliver,
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

  /** The rules, with the simulator's `forgetIds` and `forgetWaiting` faults: snapshots that drop state. */
  private faulty(rules: ReturnType<typeof paceRules>): ReturnType<typeof paceRules> {
    const { forgetIds, forgetWaiting } = this.faults;
    if (!forgetIds && !forgetWaiting) return rules;
    return {
      ...rules,
      rebase: (s) => {
        if (forgetIds) s = withoutIds(s);
        return forgetWaiting ? { ...s, waiting: [] } : s;
      },
    };
  }

  /** The broken open of the simulator's `serveShardsInTurn` fault: each shard serves as soon as it has replayed. */
  private async openInTurn(): Promise<void> {
    this.opened = true;
    for (const host of this.hosts) {
      await host.recover();
      host.serve();
    }
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

  private submit(subscriber: string, appended: Appended): ReturnType<ShardHost<PaceState, PaceOutput>['submit']> {
    if (!this.opened) throw new SluiceError('APP_STATE', 'pace: the store is not open (start the app first)');
    // Checked before anything happens: a key past the limit is refused, never journaled.
    if (appended.key.length > MAX_KEY_BYTES / 3) {
      const bytes = Buffer.byteLength(appended.key);
      if (bytes > MAX_KEY_BYTES)
        throw new SluiceError(
          'SEND_INVALID',
          `subscriber "${subscriber}": a key may take at most MAX_KEY_BYTES (${MAX_KEY_BYTES}) bytes as UTF-8, got ${bytes}`,
        );
    }
    const key = coordinatorKey(subscriber, appended.key);
    const host = this.host(key);
    // The record is stamped with the very time `opensRun` looked at: a clock read twice could tick between.
    // The host's time, not the clock's: the clock may read earlier than the shard's last record.
    const at = host.now();
    const pace = this.paces.get(subscriber);
    const opens = pace === undefined || opensRun(host.core.state(key), pace, at);
    const data = encodeEvent(this.eventOf(subscriber, appended, opens ? this.uuid() : ''));
    try {
      return host.submit({ key, at: this.faults.readClockTwice ? undefined : at, type: EVENT, data });
    } catch (error) {
      if (!(error instanceof SluiceError && error.code === 'SEND_INVALID')) throw error;
      throw new SluiceError(
        'SEND_INVALID',
        `subscriber "${subscriber}": an event, journaled as JSON with its key and ID, may take at most 64 MiB; key ${show(appended.key.slice(0, 40))}: ${error.message}`,
        { cause: error },
      );
    }
  }

  /** The event as the rules read it, with the UUID of the run it opens (`''` when it joins one). */
  private eventOf(subscriber: string, appended: Appended, runUuid: string): PaceEvent {
    let event: unknown;
    try {
      event = jsonValue(appended.event); // as a replay will read it, and not shared with the sender
      // undefined, a function or a symbol has no JSON (JSON.stringify gives undefined): not an event.
      if (event === undefined) throw new TypeError(`${typeof appended.event} is not a JSON value`);
    } catch (error) {
      throw new SluiceError(
        'SEND_INVALID',
        `pace: an event must be JSON, got ${show(appended.event)}: ${reasonOf(error)}`,
      );
    }
    const order = this.paces.get(subscriber)?.order;
    const src = appended.source;
    return {
      event,
      runUuid,
      order: order === undefined ? 0 : orderOf(order, appended, subscriber),
      ...(src !== undefined
        ? { source: { partition: `${src.topic}/${src.partition}`, offset: src.offset } }
        : appended.eventId !== undefined
          ? { eventId: appended.eventId }
          : {}),
    };
  }

  /** Records that a run finished: it never runs again. */
  async done(run: PaceRun): Promise<void> {
    if (!this.opened)
      throw new SluiceError('APP_STATE', `pace: the end of run ${run.id} cannot be recorded, the store is not open`);
    const key = coordinatorKey(run.subscriber, run.key);
    await this.host(key).submit({ key, type: DONE, data: run.id });
  }

  /** True when no record waits to become durable. */
  idle(): boolean {
    return this.hosts.every((h) => h.pending === 0);
  }

  /**
   * Stops the timers, waits for the appends under way (until `deadline`: a store that no longer answers
   * must not hold the stop forever) and for a snapshot being written, closes the store.
   */
  async close(deadline: Promise<void> = new Promise<void>(() => {})): Promise<void> {
    let late = false;
    void deadline.then(() => (late = true));
    const snapshots = Promise.all(this.hosts.map((h) => h.close()));
    await Promise.race([Promise.all(this.hosts.map((h) => h.drained())), deadline]);
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

  /** The host of a key's shard: by the store's shard count, the one a restart replays the key from. */
  private host(key: string): ShardHost<PaceState, PaceOutput> {
    if (this.faults.serveShardsInTurn) {
      const begun = this.hosts.filter((h) => h.phase !== 'new'); // by the shards opened so far
      return begun[shardOf(key, begun.length)]!;
    }
    return this.hosts[shardOf(key, this.store.shards)]!;
  }

  private readonly deliver = (out: PaceOutput): void => {
    if ('dropped' in out)
      return this.log.info('pace: an event was dropped (over its drop rate)', {
        subscriber: out.subscriber,
        key: out.key,
        at: out.at,
        eventId: out.eventId,
      });
    const run = out;
    const target = this.targets.get(run.subscriber);
    if (target) target(run);
    else
      this.log.warn('pace: a run of a subscriber that is not mounted waits for it', {
        subscriber: run.subscriber,
        runId: run.id,
      });
  };
}

/** Asks `pace.order` for an event's number: a finite number, or the event is refused with `SEND_INVALID`. */
function orderOf(
  order: (start: { event: unknown; key: string }) => number,
  start: Appended,
  subscriber: string,
): number {
  let o: unknown;
  try {
    o = order({ event: start.event, key: start.key });
  } catch (error) {
    throw new SluiceError(
      'SEND_INVALID',
      `subscriber "${subscriber}": pace.order threw for key ${show(start.key)}: ${reasonOf(error)}`,
      { cause: error },
    );
  }
  if (typeof o !== 'number' || !Number.isFinite(o))
    throw new SluiceError(
      'SEND_INVALID',
      `subscriber "${subscriber}": pace.order must return a finite number, got ${show(o)} for key ${show(start.key)}`,
    );
  return o;
}

/** The simulator's `ignoreRates` fault: the paces without their rates. */
const withoutRates = (paces: ReadonlyMap<string, CompiledPace>): ReadonlyMap<string, CompiledPace> =>
  new Map([...paces].map(([name, pace]) => [name, { ...pace, rate: undefined }]));
