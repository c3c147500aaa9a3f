import { describe, expect, it } from 'vitest';
import { LoadedTimers } from '../../src/shard/loaded-timers.js';

describe('LoadedTimers', () => {
  it('hands a timer moved beyond the horizon out once, at its new time, after it came back within reach', () => {
    // tick 10 ms, horizon 100 ms, now 0: 100 is within the horizon, 105 beyond it, both in the bucket [100, 110).
    const timers = new LoadedTimers(10, 100, 0);
    timers.set('k', 100, 0);
    timers.set('k', 105, 0);
    expect(timers.due(104, 10)).toEqual([]); // its old entry is stale: the key waits beyond the horizon
    timers.promote(104);
    expect(timers.due(104, 10)).toEqual([]);
    expect(timers.due(105, 10)).toEqual(['k']);
    expect(timers.due(200, 10)).toEqual([]);
  });

  it('forgets a cleared timer, near or far', () => {
    const timers = new LoadedTimers(10, 100, 0);
    timers.set('near', 50, 0);
    timers.set('far', 500, 0);
    timers.set('near', undefined, 0);
    timers.set('far', undefined, 0);
    timers.promote(450);
    expect(timers.due(1_000, 10)).toEqual([]);
    expect(timers.nextDueMs(1_000)).toBeUndefined();
  });
});
