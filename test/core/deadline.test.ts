import { describe, expect, it } from 'vitest';
import { deadlineIn, deadlineOf, within } from '../../src/core/deadline.js';
import type { Clock, TimerOptions } from '../../src/core/ports.js';
import { ManualClock, settle } from '../../src/testing/manual-clock.js';

/** Whether `promise` has settled, once what is ready has run. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await settle(1);
  return settled;
}

describe('deadlineIn', () => {
  it('passes when its clock reaches it, not before', async () => {
    const clock = new ManualClock(1_000);
    const deadline = deadlineIn(clock, 500);
    await clock.advance(499);
    expect(await settledYet(deadline.passed)).toBe(false);
    await clock.advance(1);
    expect(await settledYet(deadline.passed)).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('races work against it: true when the work ends first, false when the deadline passes first', async () => {
    const clock = new ManualClock();
    const deadline = deadlineIn(clock, 100);
    expect(await deadline.within(Promise.resolve('done'))).toBe(true);
    let finish: () => void = () => {};
    const slow = deadline.within(new Promise<void>((resolve) => (finish = resolve)));
    await clock.advance(100);
    expect(await slow).toBe(false);
    finish();
    expect(await deadline.within(Promise.resolve())).toBe(false); // once passed, late whatever the work
  });

  it('rejects with the work that failed before the deadline', async () => {
    const deadline = deadlineIn(new ManualClock(), 100);
    await expect(deadline.within(Promise.reject(new Error('broken')))).rejects.toThrow('broken');
  });

  it('cancel lets the timer go: the deadline never passes, and work raced against it waits for the work', async () => {
    const clock = new ManualClock();
    const deadline = deadlineIn(clock, 100);
    let finish: () => void = () => {};
    const raced = deadline.within(new Promise<void>((resolve) => (finish = resolve)));
    deadline.cancel();
    expect(clock.pendingTimers()).toBe(0);
    await clock.advance(1_000);
    expect(await settledYet(deadline.passed)).toBe(false);
    expect(await settledYet(raced)).toBe(false);
    finish();
    expect(await raced).toBe(true);
  });

  it('sets its timer with the options given (keepAlive), and without any when none are', () => {
    const calls: { delayMs: number; options: TimerOptions | undefined; args: number }[] = [];
    const clock: Clock = {
      now: () => 0,
      setTimer(delayMs, _fire, options) {
        calls.push({ delayMs, options, args: arguments.length });
        return { cancel: () => {} };
      },
    };
    deadlineIn(clock, 30_000, { keepAlive: true });
    deadlineIn(clock, 5_000);
    expect(calls).toEqual([
      { delayMs: 30_000, options: { keepAlive: true }, args: 3 },
      { delayMs: 5_000, options: undefined, args: 2 },
    ]);
  });
});

describe('deadlineOf and within', () => {
  it('race work against a deadline given as a promise', async () => {
    const clock = new ManualClock();
    const given = deadlineIn(clock, 100, { keepAlive: true });
    const deadline = deadlineOf(given.passed);
    expect(await deadline.within(Promise.resolve())).toBe(true);
    expect(await within(Promise.resolve(), given.passed)).toBe(true);
    const never = new Promise<void>(() => {});
    const a = deadline.within(never);
    const b = within(never, given.passed);
    deadline.cancel(); // not its timer: the given deadline still passes
    await clock.advance(100);
    expect(await a).toBe(false);
    expect(await b).toBe(false);
    await expect(within(Promise.reject(new Error('broken')), new Promise<void>(() => {}))).rejects.toThrow('broken');
  });
});
