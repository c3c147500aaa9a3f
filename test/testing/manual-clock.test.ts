import { describe, expect, it } from 'vitest';
import { ManualClock, SystemClock } from '../../src/index.js';
import { sleep } from '../../src/core/clock.js';

describe('ManualClock', () => {
  it('fires due timers in order, and timers set by fired work too', async () => {
    const clock = new ManualClock(1_000);
    const fired: string[] = [];
    clock.setTimer(50, () => fired.push('b'));
    clock.setTimer(10, () => {
      fired.push('a');
      clock.setTimer(10, () => fired.push('a2')); // due at 1_020
    });
    const cancelled = clock.setTimer(30, () => fired.push('never'));
    cancelled.cancel();
    await clock.advance(19);
    expect(fired).toEqual(['a']);
    expect(clock.now()).toBe(1_019);
    await clock.advance(100);
    expect(fired).toEqual(['a', 'a2', 'b']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('drives sleep(), which an abort ends early', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const slept = sleep(clock, 100, controller.signal);
    const aborted = sleep(clock, 100, controller.signal);
    controller.abort();
    expect(await aborted).toBe(false);
    const other = sleep(clock, 100);
    await clock.advance(100);
    expect(await other).toBe(true);
    expect(await slept).toBe(false);
  });
});

describe('SystemClock', () => {
  it('accepts delays beyond 2^31 ms without firing at once', () => {
    const clock = new SystemClock();
    let fired = false;
    const timer = clock.setTimer(2 ** 33, () => (fired = true));
    timer.cancel();
    expect(fired).toBe(false);
  });
});
