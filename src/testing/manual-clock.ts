import type { Clock, Timer } from '../core/ports.js';

interface Pending {
  readonly dueMs: number;
  readonly seq: number;
  readonly fire: () => void;
  cancelled: boolean;
}

/**
 * Lets every promise chain that is ready run: microtasks, then a macrotask turn, `turns` times (default
 * 3). For tests that hold a handler on a promise and need what it started to settle.
 *
 * @category Testing
 */
export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * A clock that moves only when told: `await clock.advance(ms)` fires every timer due by then, in due
 * order, letting the work each timer starts run before the next fires. Tests use it instead of sleeping.
 *
 * @category Testing
 */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: Pending[] = [];

  /**
   * A clock standing at `startMs`, with no timers.
   *
   * @param startMs - the time it starts at, in milliseconds since the epoch.
   */
  constructor(startMs = 0) {
    this.current = startMs;
  }

  /** The clock's time, in milliseconds since the epoch: moved only by `advance` and `advanceTo`. */
  now(): number {
    return this.current;
  }

  /** Calls `fire` once when `advance` passes `delayMs` from now; sets no Node timer, so it never holds the process. */
  setTimer(delayMs: number, fire: () => void): Timer {
    const timer: Pending = { dueMs: this.current + Math.max(0, delayMs), seq: this.seq++, fire, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Timers set and not yet fired or cancelled. */
  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** When the next timer is due, or undefined when none is set. */
  nextDueMs(): number | undefined {
    const next = this.earliest();
    return next?.dueMs;
  }

  /**
   * Moves time forward by `ms`, firing due timers oldest first. Work already in flight settles before the
   * first timer is looked at, and after each one fires, so a timer set by that work is seen too.
   *
   * @throws RangeError when `ms` is negative (or not a number).
   *
   * @example
   * ```ts
   * const clock = new ManualClock();
   * const app = new App({ name: 'billing', clock });
   * // ... a handler fails; its retry waits 100 ms
   * await clock.advance(100); // the retry runs
   * await app.idle();
   * ```
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance: ms must be >= 0, got ${ms}`);
    const target = this.current + ms;
    await settle();
    for (;;) {
      const next = this.earliest();
      if (!next || next.dueMs > target) break;
      this.timers.splice(this.timers.indexOf(next), 1);
      this.current = Math.max(this.current, next.dueMs);
      next.fire();
      await settle();
    }
    this.current = target;
  }

  /** Moves time to `ms` since the epoch (never backwards). */
  async advanceTo(ms: number): Promise<void> {
    await this.advance(Math.max(0, ms - this.current));
  }

  private earliest(): Pending | undefined {
    this.timers = this.timers.filter((t) => !t.cancelled);
    let best: Pending | undefined;
    for (const t of this.timers)
      if (!best || t.dueMs < best.dueMs || (t.dueMs === best.dueMs && t.seq < best.seq)) best = t;
    return best;
  }
}
