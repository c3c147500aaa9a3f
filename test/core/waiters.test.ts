import { describe, expect, it } from 'vitest';
import { Waiters } from '../../src/core/waiters.js';

describe('Waiters', () => {
  it('wake() resolves every caller waiting then, and only those', async () => {
    const waiters = new Waiters();
    const woken: string[] = [];
    const a = waiters.next().then(() => woken.push('a'));
    const b = waiters.next().then(() => woken.push('b'));
    expect(waiters.waiting).toBe(true);
    waiters.wake();
    expect(waiters.waiting).toBe(false);
    const c = waiters.next().then(() => woken.push('c'));
    await Promise.all([a, b]);
    expect(woken).toEqual(['a', 'b']); // c waits for the next wake
    waiters.wake();
    await c;
    expect(woken).toEqual(['a', 'b', 'c']);
  });

  it('a caller that waits again from its wake-up waits for the wake after', async () => {
    const waiters = new Waiters();
    let rounds = 0;
    const looping = (async () => {
      while (rounds < 2) {
        await waiters.next();
        rounds++;
      }
    })();
    await Promise.resolve();
    waiters.wake();
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(rounds).toBe(1);
    waiters.wake();
    await looping;
    expect(rounds).toBe(2);
  });

  it('wake() with nobody waiting does nothing', () => {
    const waiters = new Waiters();
    waiters.wake();
    expect(waiters.waiting).toBe(false);
  });

  it('counts its wakes, whether anyone waited or not', () => {
    const waiters = new Waiters();
    const before = waiters.wakes;
    waiters.wake();
    void waiters.next();
    waiters.wake();
    expect(waiters.wakes - before).toBe(2);
  });
});
