import { describe, expect, it } from 'vitest';
import { FeedCommits } from '../../../src/brokers/platformatic/commits.js';
import { Feed } from '../../../src/brokers/platformatic/feed.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';
import { silentLogger } from '../../../src/testing/memory-logger.js';

/** A commit the fake consumer was asked for, answered by the test. */
interface Asked {
  offsets: { partition: number; offset: bigint }[];
  answer(): void;
  refuse(): void;
}

/** FeedCommits over one feed of partition 0, on a consumer whose commits the test answers one by one. */
function committing() {
  const asked: Asked[] = [];
  const consumer = {
    commit: ({ offsets }: { offsets: { partition: number; offset: bigint }[] }) =>
      new Promise<void>((answer, reject) =>
        asked.push({ offsets, answer, refuse: () => reject(new Error('commit failed 4 times.')) }),
      ),
  };
  const feed = new Feed(0);
  const commits = new FeedCommits({
    topic: 't',
    log: silentLogger,
    clock: new ManualClock(),
    rebalanceTimeoutMs: 1_000,
    consumer: () => consumer as never,
    feeds: () => [feed],
    closing: () => false,
  });
  return { asked, feed, commits };
}

/** Lets every promise callback that can run, run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('sluice/kafka/platformatic: the group offsets of a member', () => {
  it('flushes while a commit is under way share one next request, which carries what finished meanwhile', async () => {
    const { asked, feed, commits } = committing();
    feed.markCommittable(10);
    const first = commits.flush();
    await settle();
    expect(asked).toHaveLength(1);
    feed.markCommittable(20);
    // The broker is away: each commit is refused after the client's retries, while the periodic commits and a
    // revoke's flush pile up behind the first. Once the next request is answered, every one of them resolves.
    let done = 0;
    const waiting = Array.from({ length: 5 }, () => commits.flush().then(() => done++));
    await settle();
    expect(asked).toHaveLength(1);
    asked[0]!.refuse();
    await first;
    await settle();
    expect(asked.map((a) => a.offsets.map((o) => Number(o.offset)))).toEqual([[10], [20]]);
    expect(done).toBe(0);
    asked[1]!.refuse();
    await Promise.all(waiting);
    expect(done).toBe(5);
    expect(asked).toHaveLength(2);
    expect(feed.committed).toBeUndefined();
  });

  it('a commit refused resolves the flush, commits nothing, and the next flush sends the offset again', async () => {
    const { asked, feed, commits } = committing();
    feed.markCommittable(7);
    const first = commits.flush();
    await settle();
    asked[0]!.refuse();
    await first;
    expect(feed.committed).toBeUndefined();
    expect(feed.pending()).toBe(true);
    const again = commits.flush();
    await settle();
    expect(asked[1]!.offsets.map((o) => Number(o.offset))).toEqual([7]);
    asked[1]!.answer();
    await again;
    expect(feed.committed).toBe(7);
    expect(feed.pending()).toBe(false);
  });
});
