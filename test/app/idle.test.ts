/**
 * `app.idle()`'s loop (waitIdle) against a scripted app: it resolves only on an answer of the brokers that no
 * work overtook.
 */
import { describe, expect, it } from 'vitest';
import { waitIdle, type IdleSource } from '../../src/app/idle.js';
import { Waiters } from '../../src/core/waiters.js';

describe('waitIdle', () => {
  it('does not trust lags that work overtook: a handler read and published while the brokers answered', async () => {
    const progress = new Waiters();
    let asked = 0;
    let published = false;
    let read = false;
    const app: IdleSource = {
      quiet: () => true,
      progress,
      lags: async () => {
        asked++;
        // What the broker read before the handler ran: nothing left anywhere.
        const answer = [0, published && !read ? 1 : 0];
        if (asked === 1) {
          // Meanwhile, a message arrives, is handled, and its handler publishes onward.
          progress.wake();
          published = true;
        } else if (asked === 2) {
          queueMicrotask(() => {
            read = true;
            progress.wake();
          });
        }
        return answer;
      },
    };
    await waitIdle(app);
    expect(published && read).toBe(true);
    expect(asked).toBeGreaterThanOrEqual(3);
  });

  it('resolves at once when the app is quiet and nothing is left to read', async () => {
    let asked = 0;
    await waitIdle({ quiet: () => true, progress: new Waiters(), lags: async () => (asked++, [0, 0]) });
    expect(asked).toBe(1);
  });

  it('asks again when a broker cannot answer for a moment (retriable), and fails on any other error', async () => {
    let asked = 0;
    const coordinatorLoading = Object.assign(new Error('The coordinator is loading'), { retriable: true });
    await waitIdle({
      quiet: () => true,
      progress: new Waiters(),
      lags: async () => {
        if (++asked <= 2) throw coordinatorLoading;
        return [0];
      },
    });
    expect(asked).toBe(3);
    const refused = new Error('not authorized');
    await expect(
      waitIdle({ quiet: () => true, progress: new Waiters(), lags: () => Promise.reject(refused) }),
    ).rejects.toBe(refused);
  });
});
