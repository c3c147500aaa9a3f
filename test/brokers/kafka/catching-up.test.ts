import { describe, expect, it } from 'vitest';
import { ASK_ATTEMPTS, askAgain, isCatchingUp, partitionsReaching } from '../../../src/brokers/kafka/catching-up.js';
import type { Clock } from '../../../src/index.js';

/** A clock whose timers fire on the next turn, and the pauses asked of it. */
function quickClock(): { clock: Clock; pauses: number[] } {
  const pauses: number[] = [];
  const clock: Clock = {
    now: () => 0,
    setTimer: (delayMs, fire) => {
      pauses.push(delayMs);
      queueMicrotask(fire);
      return { cancel: () => {} };
    },
  };
  return { clock, pauses };
}

/** kafkajs's protocol error, as far as these look at it. */
const answer = (type: string) => Object.assign(new Error(type), { type, retriable: true });

describe('kafka: admin requests asked again while the broker catches up with a new topic', () => {
  it('asks again after a leader that moved or a topic not yet known, with growing pauses', async () => {
    const { clock, pauses } = quickClock();
    const failures = [answer('NOT_LEADER_FOR_PARTITION'), answer('UNKNOWN_TOPIC_OR_PARTITION')];
    let asked = 0;
    const ends = await askAgain(async () => {
      asked++;
      const failure = failures.shift();
      if (failure) throw failure;
      return 'ends';
    }, clock);
    expect({ ends, asked, pauses }).toEqual({ ends: 'ends', asked: 3, pauses: [100, 200] });
  });

  it('throws any other failure at once, and a catching-up one after the last attempt', async () => {
    const { clock } = quickClock();
    let asked = 0;
    const refused = answer('TOPIC_AUTHORIZATION_FAILED');
    await expect(askAgain(() => Promise.reject((asked++, refused)), clock)).rejects.toBe(refused);
    expect(asked).toBe(1);
    asked = 0;
    const lagging = answer('LEADER_NOT_AVAILABLE');
    await expect(askAgain(() => Promise.reject((asked++, lagging)), clock)).rejects.toBe(lagging);
    expect(asked).toBe(ASK_ATTEMPTS);
  });

  it('reads an aggregate of answers (createTopics) as catching up only when every one is', () => {
    expect(isCatchingUp({ errors: [answer('UNKNOWN_TOPIC_OR_PARTITION'), answer('LEADER_NOT_AVAILABLE')] })).toBe(true);
    expect(isCatchingUp({ errors: [answer('UNKNOWN_TOPIC_OR_PARTITION'), answer('POLICY_VIOLATION')] })).toBe(false);
    expect(isCatchingUp(undefined)).toBe(false);
    expect(isCatchingUp(new Error('x'))).toBe(false);
  });

  it('counts the partitions of a pinned message again, afresh, while the count does not reach it, for 0.7 s', async () => {
    const { clock, pauses } = quickClock();
    const asked: boolean[] = [];
    const counts =
      (...answers: number[]) =>
      (fresh: boolean) => {
        asked.push(fresh);
        return Promise.resolve(answers.shift() ?? 3);
      };
    // Partitions just added: the cached count and the first fresh one are behind; the third fresh one has them.
    expect(await partitionsReaching(4, counts(3, 3, 3, 6), clock)).toBe(6);
    expect({ asked, pauses }).toEqual({ asked: [false, true, true, true], pauses: [100, 200] });
    // Within the count at once: asked once, as the client knows it.
    asked.length = pauses.length = 0;
    expect(await partitionsReaching(2, counts(3), clock)).toBe(3);
    expect({ asked, pauses }).toEqual({ asked: [false], pauses: [] });
    // A partition the topic does not have: the broker still says so after four fresh counts.
    asked.length = 0;
    expect(await partitionsReaching(3, counts(), clock)).toBe(3);
    expect({ asked, pauses }).toEqual({ asked: [false, true, true, true, true], pauses: [100, 200, 400] });
    // No count makes a negative or fractional partition one the topic has: counted once.
    for (const partition of [-1, 7.5]) {
      asked.length = pauses.length = 0;
      expect(await partitionsReaching(partition, counts(), clock)).toBe(3);
      expect({ asked, pauses }).toEqual({ asked: [false], pauses: [] });
    }
  });
});
