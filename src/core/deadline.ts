import type { Clock, Timer, TimerOptions } from './ports.js';

/**
 * A moment on a clock that work is raced against: a stop's shutdown timeout, a revoke's, a close's. Made by
 * {@link deadlineIn} (a timer of its own) or {@link deadlineOf} (a deadline given as a promise).
 */
export interface Deadline {
  /** Resolves when the deadline passes (never, once cancelled first): what a call taking a deadline is given. */
  readonly passed: Promise<void>;
  /**
   * Races `work` against the deadline: resolves true when the work ended first, false when the deadline passed
   * first; rejects when the work failed first.
   */
  within(work: Promise<unknown>): Promise<boolean>;
  /** Lets the timer go, once what the deadline bounds is done: it never passes then. */
  cancel(): void;
}

/**
 * A deadline `ms` from now on `clock`: one timer, set with `options` (`keepAlive` when the caller awaits the
 * deadline: its timer then keeps the process alive until it passes or is cancelled).
 */
export function deadlineIn(clock: Clock, ms: number, options?: TimerOptions): Deadline {
  let timer: Timer | undefined;
  let late: (value: false) => void = () => {};
  const timedOut = new Promise<false>((resolve) => (late = resolve));
  const passed = new Promise<void>((resolve) => {
    const fire = (): void => {
      resolve();
      late(false);
    };
    timer = options === undefined ? clock.setTimer(ms, fire) : clock.setTimer(ms, fire, options);
  });
  return {
    passed,
    within: (work) => Promise.race([work.then(() => true), timedOut]),
    cancel: () => timer?.cancel(),
  };
}

/** The deadline `passed` resolves at (its timer someone else's: `cancel` does nothing). */
export function deadlineOf(passed: Promise<void>): Deadline {
  const timedOut = passed.then(() => false as const);
  return { passed, within: (work) => Promise.race([work.then(() => true), timedOut]), cancel: () => {} };
}

/**
 * Races `work` against `deadline`: resolves true when the work ended first, false when the deadline passed
 * first; rejects when the work failed first.
 */
export function within(work: Promise<unknown>, deadline: Promise<void>): Promise<boolean> {
  return Promise.race([work.then(() => true), deadline.then(() => false)]);
}
