import { describe, expect, it } from 'vitest';
import type { Record } from '../../../src/brokers/platformatic/feed.js';
import { Feeds } from '../../../src/brokers/platformatic/feeds.js';

/** A message of `partition` at `offset`, as the client's stream reads it. */
const record = (partition: number, offset: number): Record =>
  ({
    topic: 't',
    partition,
    offset: BigInt(offset),
    leaderEpoch: 0,
    key: null,
    value: null,
    headers: new Map(),
  }) as unknown as Record;

/** Reads `offsets` of `partition` into its feed. */
const read = (feeds: Feeds, partition: number, ...offsets: number[]) => {
  for (const o of offsets) feeds.get(partition)!.admit(record(partition, o));
};

describe('the feeds of a consumer on @platformatic/kafka', () => {
  it('hands out nothing of a partition until its onAssign settled, and a reassigned one waits for its own', () => {
    const feeds = new Feeds();
    const [first] = feeds.add([0]);
    read(feeds, 0, 5);
    expect([feeds.ready(0), feeds.take(10)]).toEqual([false, []]);
    feeds.remove([0]);
    feeds.add([0]); // back, before the first assignment's onAssign settled
    read(feeds, 0, 7);
    feeds.taken([first!]); // the first assignment's settling does not free the second
    expect([feeds.ready(0), feeds.take(10)]).toEqual([false, []]);
    feeds.taken(feeds.committing().filter((f) => f.partition === 0 && !f.revoked));
    expect(feeds.ready(0)).toBe(true);
    expect(feeds.take(10).map((m) => m.offset)).toEqual([7]);
  });

  it('counts revokes settling per partition: settling until each has settled, across a reassignment', () => {
    const feeds = new Feeds();
    feeds.taken(feeds.add([1]));
    const once = feeds.remove([1]).feeds;
    feeds.taken(feeds.add([1]));
    const twice = feeds.remove([1]).feeds;
    expect(feeds.settling(1)).toBe(true);
    feeds.settled(once);
    expect(feeds.settling(1)).toBe(true);
    feeds.settled(twice);
    expect(feeds.settling(1)).toBe(false);
  });

  it('marks finished work on the feed leaving while its revoke settles, and tells where a revoked partition resumes', () => {
    const feeds = new Feeds();
    feeds.taken(feeds.add([2, 3]));
    read(feeds, 2, 10, 11, 12);
    read(feeds, 3, 40);
    expect(feeds.take(10)).toHaveLength(4);
    feeds.commit(2, 11);
    const { feeds: gone, resumes } = feeds.remove([2, 3]);
    expect(Object.fromEntries(resumes)).toEqual({ 2: 11, 3: 40 }); // past what finished, else where it began
    feeds.commit(2, 13); // a run of the revoked partition finished while its revoke settles
    expect(gone.find((f) => f.partition === 2)!.committable).toBe(13);
    expect(feeds.committing()).toHaveLength(2);
    feeds.settled(gone);
    expect(feeds.committing()).toEqual([]);
  });

  it('takes from a partition further on each time, within the limit per partition, none of a paused one', () => {
    const feeds = new Feeds();
    feeds.taken(feeds.add([0, 1, 2]));
    for (const p of [0, 1, 2]) read(feeds, p, 0, 1, 2);
    feeds.get(2)!.paused = true;
    const first = feeds.take(2, () => 1).map((m) => m.partition);
    const second = feeds.take(2, () => 1).map((m) => m.partition);
    expect(first).toHaveLength(2);
    expect(first[0]).not.toBe(second[0]);
    expect([...first, ...second]).not.toContain(2);
    expect(feeds.backlog()).toBe(9 - 4);
  });
});
