import { sabotage } from '../core/sabotage.js';
import { TIMER, type Effects, type Rules, type ShardRecord } from './rules.js';
import { TimerWheel } from './timer-wheel.js';

/** Something the core tells its host about, as it happens (for metrics and logs). */
export type ShardEvent = { readonly type: 'applied'; readonly lsn: number; readonly key: string; readonly record: string } | { readonly type: 'retired'; readonly key: string };

/** Settings of a {@link ShardCore}. */
export interface ShardCoreOptions {
  /** The wheel's bucket width. @default 10 */
  tickMs?: number;
  /** Timers further out wait outside the wheel until a sweep brings them in. @default 60_000 */
  horizonMs?: number;
  /** Where time starts for the wheel (the host's clock when the core is made). */
  nowMs: number;
}

/** A shard snapshot: every key's state and timer (null for none) as of `lsn`. */
export interface ShardSnapshot<S> {
  readonly lsn: number;
  readonly keys: readonly (readonly [string, S, number | null])[];
}

interface SnapshotCapture<S> {
  readonly lsn: number;
  readonly keys: string[];
  next: number;
  /** State and timer of keys changed since the snapshot began, as they were then. */
  readonly before: Map<string, [S | undefined, number | null]>;
}

interface Queued<O> {
  readonly lsn: number;
  readonly value: O;
}

/**
 * The pure state of one shard: every key's coordinator state, derived from the shard's records by
 * `apply`, the only transition — called as each record is appended and again for each record replayed
 * after a crash, so live and recovered state cannot differ. Outputs wait in LSN order until `release`
 * says their record is durable. Timers: `due(now)` names the keys whose timer has come, in bounded chunks;
 * the host appends a `timer` record for each and applies it like any other.
 */
export class ShardCore<S, O> {
  private readonly states = new Map<string, S>();
  private readonly timers = new Map<string, number>();
  /** Timers beyond the wheel's horizon, by key. */
  private readonly far = new Map<string, number>();
  private readonly wheel: TimerWheel;
  private readonly queue: Queued<O>[] = [];
  /** The earliest wheel timer, kept as timers are added; recomputed only after one was removed or moved. */
  private earliest: number | undefined = undefined;
  private earliestStale = false;
  private lastLsn = 0;
  private readonly listeners: ((event: ShardEvent) => void)[] = [];
  /** A snapshot being written in chunks: the states it must see, as of its LSN, for keys changed since. */
  private capture: SnapshotCapture<S> | undefined;

  constructor(
    private readonly rules: Rules<S, O>,
    options: ShardCoreOptions,
  ) {
    this.wheel = new TimerWheel(options.tickMs ?? 10, options.horizonMs ?? 60_000, options.nowMs);
  }

  /**
   * The one transition. `lsn` must exceed the last applied; the record's `at` is its time. Returns what
   * the rules replied to the record's appender, if anything.
   */
  apply(lsn: number, record: ShardRecord): unknown {
    if (!(lsn > this.lastLsn)) throw new RangeError(`ShardCore.apply: LSN ${lsn} after ${this.lastLsn}; records apply once, in order`);
    this.lastLsn = lsn;
    const key = record.key;
    if (this.capture && !this.capture.before.has(key)) this.capture.before.set(key, [this.states.get(key), this.timers.get(key) ?? null]);
    let timer = this.timers.get(key);
    let timerChanged = false;
    let reply: unknown = undefined;
    const queue = this.queue;
    const effects: Effects<O> = {
      output: (value) => void queue.push({ lsn, value }),
      timer: (atMs) => {
        timer = atMs;
        timerChanged = true;
      },
      reply: (value) => void (reply = value),
    };
    if (record.type === TIMER) {
      // A timer record clears the timer it fired; the rules may set the next one.
      timer = undefined;
      timerChanged = true;
    }
    const next = this.rules.apply(this.states.get(key) ?? this.rules.initial(key), record, effects);
    if (timerChanged) this.setTimer(key, timer, record.at);
    this.emit({ type: 'applied', lsn, key, record: record.type });
    if (this.rules.retired(next) && timer === undefined) {
      if (this.states.delete(key)) this.emit({ type: 'retired', key });
    } else this.states.set(key, next);
    return reply;
  }

  /** Outputs whose records are durable (LSN <= `durableLsn`), in LSN order; each is handed out once. */
  release(durableLsn: number): O[] {
    let n = 0;
    while (n < this.queue.length && this.queue[n]!.lsn <= durableLsn) n++;
    return this.queue.splice(0, n).map((q) => q.value);
  }

  /**
   * Starts a snapshot of the state as of the last applied record, to be serialised a chunk at a time while
   * records go on being applied (a key changed meanwhile is seen as it was). Only one at a time.
   */
  beginSnapshot(): { readonly lsn: number } {
    if (this.capture) throw new Error('ShardCore.beginSnapshot: a snapshot is under way');
    this.capture = { lsn: this.lastLsn, keys: [...this.states.keys()], next: 0, before: new Map() };
    return this.capture;
  }

  /** The next (up to) `max` entries of the snapshot under way, as JSON texts; empty when it is done. */
  snapshotChunk(max: number): string[] {
    const c = this.capture;
    if (!c) throw new Error('ShardCore.snapshotChunk: no snapshot under way');
    const out: string[] = [];
    for (; c.next < c.keys.length && out.length < max; c.next++) {
      const key = c.keys[c.next]!;
      const before = c.before.get(key);
      const state = before ? before[0] : this.states.get(key);
      if (state !== undefined) out.push(JSON.stringify([key, this.rules.rebase ? this.rules.rebase(state) : state, before ? before[1] : (this.timers.get(key) ?? null)]));
    }
    return out;
  }

  endSnapshot(): void {
    this.capture = undefined;
  }

  /** Starts from a snapshot instead of from nothing: before any record is applied. */
  importState(snapshot: ShardSnapshot<S>, nowMs: number): void {
    if (this.lastLsn !== 0) throw new RangeError('ShardCore.importState: the core has applied records already');
    this.lastLsn = snapshot.lsn;
    for (const [key, state, timer] of snapshot.keys) {
      this.states.set(key, state);
      if (timer !== null && !sabotage.loseTimers) this.setTimer(key, timer, nowMs);
    }
  }

  /** Up to `max` keys whose timer is due at `nowMs`, oldest first: the host appends a `timer` record for each. */
  due(nowMs: number, max: number): string[] {
    this.promote(nowMs);
    return this.wheel.due(nowMs, max, (key) => this.timers.get(key));
  }

  /** The key's timer, if one is set. */
  timerOf(key: string): number | undefined {
    return this.timers.get(key);
  }

  /**
   * When the host should next call `due`: the earliest bucket of the wheel, or — while timers wait beyond
   * the horizon — half a horizon from `nowMs` at the latest, so that a sweep brings them in. Undefined when
   * no timer is set. Never more than the horizon away, so a Node timer can always hold it.
   */
  nextDueMs(nowMs: number): number | undefined {
    if (this.earliestStale) {
      this.earliest = this.wheel.earliestMs((key) => this.timers.get(key));
      this.earliestStale = false;
    }
    const wheel = this.earliest;
    const sweep = this.far.size > 0 ? nowMs + this.wheel.horizonMs / 2 : undefined;
    if (wheel === undefined) return sweep;
    return sweep === undefined ? wheel : Math.min(wheel, sweep);
  }

  state(key: string): S | undefined {
    return this.states.get(key);
  }

  /** How many keys have state. */
  get keyCount(): number {
    return this.states.size;
  }

  /** Keys with state. */
  keys(): IterableIterator<string> {
    return this.states.keys();
  }

  get appliedLsn(): number {
    return this.lastLsn;
  }

  /** Outputs waiting for their records to become durable. */
  get waiting(): number {
    return this.queue.length;
  }

  onEvent(listener: (event: ShardEvent) => void): void {
    this.listeners.push(listener);
  }

  private setTimer(key: string, atMs: number | undefined, nowMs: number): void {
    this.far.delete(key);
    if (this.timers.has(key)) this.earliestStale = true; // removed or moved: the earliest may have gone
    if (atMs === undefined) {
      this.timers.delete(key);
      return;
    }
    this.timers.set(key, atMs);
    if (this.wheel.within(atMs, nowMs)) this.addToWheel(key, atMs);
    else this.far.set(key, atMs);
  }

  private addToWheel(key: string, atMs: number): void {
    this.wheel.add(key, atMs);
    if (!this.earliestStale && (this.earliest === undefined || atMs < this.earliest)) this.earliest = atMs;
  }

  /** Brings timers that came within the horizon into the wheel. */
  private promote(nowMs: number): void {
    if (this.far.size === 0) return;
    for (const [key, at] of this.far) {
      if (!this.wheel.within(at, nowMs)) continue;
      this.far.delete(key);
      this.addToWheel(key, at);
    }
  }

  private emit(event: ShardEvent): void {
    for (const l of this.listeners) l(event);
  }
}
