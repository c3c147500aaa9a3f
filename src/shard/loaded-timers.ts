import { TimerWheel } from './timer-wheel.js';

/**
 * The timers of a shard's loaded keys: those within the horizon in a {@link TimerWheel}, those beyond it set
 * aside until `promote` brings them in, and the earliest wheel timer, kept as timers are added and recomputed
 * only after one was removed or moved.
 */
export class LoadedTimers {
  /** Every loaded key's timer. */
  private readonly byKey = new Map<string, number>();
  /** Timers beyond the wheel's horizon, by key. */
  private readonly far = new Map<string, number>();
  private readonly wheel: TimerWheel;
  /**
   * What the wheel is told of a key's timer: none while it waits beyond the horizon, so that an entry the key
   * left in the wheel is stale even when its new, far timer falls in the same bucket (it comes back by `promote`).
   */
  private readonly timerOf = (key: string): number | undefined =>
    this.far.size > 0 && this.far.has(key) ? undefined : this.byKey.get(key);
  private earliest: number | undefined = undefined;
  private earliestStale = false;

  constructor(tickMs: number, horizonMs: number, nowMs: number) {
    this.wheel = new TimerWheel(tickMs, horizonMs, nowMs);
  }

  get horizonMs(): number {
    return this.wheel.horizonMs;
  }

  /** The key's timer, if it has one. */
  get(key: string): number | undefined {
    return this.byKey.get(key);
  }

  /** Sets a key's timer (`undefined`: clears it); `nowMs` says whether it is within the horizon. */
  set(key: string, atMs: number | undefined, nowMs: number): void {
    const had = this.byKey.has(key);
    const wasFar = this.far.delete(key);
    if (had) this.earliestStale = true; // removed or moved: the earliest may have gone
    if (atMs === undefined) this.byKey.delete(key);
    else {
      this.byKey.set(key, atMs);
      if (this.wheel.within(atMs, nowMs)) this.addToWheel(key, atMs);
      else this.far.set(key, atMs);
    }
    if (had && !wasFar) this.wheel.dropped(this.timerOf);
  }

  /** Keeps the timer of a key handed out as due already: in no wheel, since its timer record comes next. */
  setDue(key: string, atMs: number): void {
    this.byKey.set(key, atMs);
  }

  /** Takes a key's timer out (the key is parked) and returns it: undefined when it has none. */
  remove(key: string): number | undefined {
    const timer = this.byKey.get(key);
    if (timer === undefined) return undefined;
    this.byKey.delete(key);
    if (!this.far.delete(key)) {
      if (timer === this.earliest) this.earliestStale = true; // only the earliest's leaving changes it
      this.wheel.dropped(this.timerOf);
    }
    return timer;
  }

  /**
   * A lower bound of the wheel's timers, for a caller asking what is due by `nowMs`: the start of its first
   * bucket, found without reading the bucket; but where that is later than `nowMs`, the earliest timer,
   * exactly: the cursor's bucket may hold timers added overdue, earlier than its start (a host whose timers
   * wait for its input asks up to a time gone by).
   */
  firstDueMs(nowMs: number): number | undefined {
    const first = this.wheel.firstBucketMs();
    return first !== undefined && first > nowMs ? this.nextDueMs(nowMs) : first;
  }

  /** Up to `max` keys whose wheel timer is at or before `untilMs`, oldest first (to a bucket). */
  due(untilMs: number, max: number): string[] {
    const got = this.wheel.due(untilMs, max, this.timerOf);
    if (got.length > 0) this.earliestStale = true;
    return got;
  }

  /** Brings timers that came within the horizon into the wheel. */
  promote(nowMs: number): void {
    if (this.far.size === 0) return;
    for (const [key, at] of this.far) {
      if (!this.wheel.within(at, nowMs)) continue;
      this.far.delete(key);
      this.addToWheel(key, at);
    }
  }

  /**
   * When these timers next need a call to `due`: the earliest wheel timer, or — while timers wait beyond the
   * horizon — half a horizon from `nowMs` at the latest, so that a sweep brings them in. Undefined when none is set.
   */
  nextDueMs(nowMs: number): number | undefined {
    if (this.earliestStale) {
      this.earliest = this.wheel.earliestMs(this.timerOf);
      this.earliestStale = false;
    }
    return this.far.size > 0 ? earlier(this.earliest, nowMs + this.wheel.horizonMs / 2) : this.earliest;
  }

  private addToWheel(key: string, atMs: number): void {
    this.wheel.add(key, atMs);
    if (!this.earliestStale && (this.earliest === undefined || atMs < this.earliest)) this.earliest = atMs;
  }
}

/** The earlier of a time that may be unknown and one that is known. */
export const earlier = (a: number | undefined, b: number): number => (a === undefined || b < a ? b : a);
