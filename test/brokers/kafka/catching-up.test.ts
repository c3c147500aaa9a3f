import { describe, expect, it } from 'vitest';
import { ASK_ATTEMPTS, askAgain, isCatchingUp } from '../../../src/brokers/kafka/catching-up.js';
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
});
