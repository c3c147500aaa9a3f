import { describe, expect, it } from 'vitest';
import { ManualClock, memoryStore, settle, type MemoryStore } from '../../src/index.js';
import { TIMER, type Rules } from '../../src/shard/rules.js';
import { snapshotsThrough } from '../helpers.js';
import { ShardHost } from '../../src/pace-stage/shard-host.js';

/** Test rules: events count up and set a timer 100 ms on; the timer outputs the count and retires the key. */
type Out = { key: string; kind: 'seen' | 'fired' | 'resumed'; count: number };
const rules: Rules<{ count: number }, Out> = {
  initial: () => ({ count: 0 }),
  apply(state, record, fx) {
    if (record.type === TIMER) {
      fx.output({ key: record.key, kind: 'fired', count: state.count });
      return { count: 0 };
    }
    fx.output({ key: record.key, kind: 'seen', count: state.count + 1 });
    fx.timer(record.at + 100);
    return { count: state.count + 1 };
  },
  retired: (s) => s.count === 0,
};

function host(store = memoryStore({ shards: 1 }), clock = new ManualClock(1_000), chunk?: number) {
  const outputs: Out[] = [];
  const h = new ShardHost({
    log: store.log(0),
    rules,
    clock,
    chunk,
    onOutput: (o) => outputs.push(o),
    resume: (key, state) => [{ key, kind: 'resumed' as const, count: state.count }],
  });
  return { h, outputs, store, clock };
}

describe('ShardHost', () => {
  it('applies at once and hands out outputs only when their record is durable', async () => {
    const { h, outputs } = host();
    await h.open();
    const pending = h.append({ key: 'a', type: 'event' });
    expect(h.core.state('a')).toEqual({ count: 1 }); // applied at once
    expect(outputs).toEqual([]); // not durable yet
    expect(await pending).toBe(1);
    expect(outputs).toEqual([{ key: 'a', kind: 'seen', count: 1 }]);
  });

  it('drained() resolves once every pending append is durable', async () => {
    const { h, store } = host();
    await h.open();
    await h.drained(); // nothing pending: at once
    void h.append({ key: 'a', type: 'event' });
    void h.append({ key: 'b', type: 'event' });
    expect(h.pending).toBe(2);
    await h.drained();
    expect(h.pending).toBe(0);
    expect(store.log(0).durableLsn()).toBe(2);
  });

  it('fires timers on the clock, as records', async () => {
    const { h, outputs, clock, store } = host();
    await h.open();
    await h.append({ key: 'a', type: 'event' });
    await h.append({ key: 'a', type: 'event' });
    await clock.advance(99);
    expect(outputs.filter((o) => o.kind === 'fired')).toEqual([]);
    await clock.advance(1);
    await settle();
    expect(outputs.filter((o) => o.kind === 'fired')).toEqual([{ key: 'a', kind: 'fired', count: 2 }]);
    expect(h.core.state('a')).toBeUndefined(); // retired
    expect(store.log(0).durableLsn()).toBe(3); // the firing is a record of its own
  });

  it('recovers the state from the log after a crash, and resumes what keys still owe', async () => {
    const first = host();
    await first.h.open();
    await first.h.append({ key: 'a', type: 'event' });
    await first.h.append({ key: 'b', type: 'event' });
    void first.h.append({ key: 'b', type: 'event' }).catch(() => {}); // not durable when the crash comes
    const crashed = first.store.crash();
    void first.h.close(); // the crashed process: its timers stop now, and nothing waits for what it still wrote
    const second = host(crashed, first.clock);
    await second.h.open();
    expect(second.h.core.state('a')).toEqual({ count: 1 });
    expect(second.h.core.state('b')).toEqual({ count: 1 });
    expect(second.outputs.sort((x, y) => x.key.localeCompare(y.key))).toEqual([
      { key: 'a', kind: 'resumed', count: 1 },
      { key: 'b', kind: 'resumed', count: 1 },
    ]);
    await second.clock.advance(100); // recovered timers still fire
    await settle();
    expect(second.outputs.filter((o) => o.kind === 'fired')).toHaveLength(2);
  });

  it('resumes, after a snapshot and a tail, what every key owes, parked or loaded, and nothing for keys that owe nothing', async () => {
    const clock = new ManualClock(1_000);
    const make = (store: MemoryStore) => {
      const outputs: Out[] = [];
      const h = new ShardHost({
        log: store.log(0),
        rules,
        clock,
        maxLoadedKeys: 2, // most keys parked, at the snapshot and after the import
        onOutput: (o) => outputs.push(o),
        // An odd count owes something; an even one does not.
        resume: (key, state) => (state.count % 2 === 1 ? [{ key, kind: 'resumed' as const, count: state.count }] : []),
      });
      return { h, outputs };
    };
    const store = memoryStore({ shards: 1 });
    const first = make(store);
    await first.h.open();
    const counts = new Map<string, number>();
    const event = async (key: string): Promise<void> => {
      await first.h.append({ key, type: 'event' });
      counts.set(key, (counts.get(key) ?? 0) + 1);
    };
    for (let k = 0; k < 20; k++) for (let i = 0; i <= k % 3; i++) await event(`k${k}`);
    expect(await first.h.snapshot()).toBe(true);
    for (const k of [0, 1, 5, 20]) await event(`k${k}`); // the tail: owing changes both ways, and a new key
    await first.h.close();
    const second = make(store.crash());
    await second.h.open();
    const owed = [...counts]
      .filter(([, n]) => n % 2 === 1)
      .map(([key, count]) => ({ key, kind: 'resumed' as const, count }));
    const byKey = (x: Out, y: Out) => x.key.localeCompare(y.key);
    expect(second.outputs.sort(byKey)).toEqual(owed.sort(byKey));
    expect(second.h.core.parkedCount).toBeGreaterThan(10);
  });

  it('reads a memory store in turns of the event loop, as a disk is read: seeded, the same turns for a seed', async () => {
    /** Turns of the event loop that a replay of the store's shard 0 takes. */
    const replayTurns = async (store: MemoryStore): Promise<number> => {
      let turns = 0;
      let done = false;
      const tick = (): void => void (done || (turns++, setImmediate(tick)));
      setImmediate(tick);
      let records = 0;
      await store.log(0).replay(1, () => records++);
      done = true;
      expect(records).toBe(2_500);
      return turns;
    };
    const filled = async (store: MemoryStore): Promise<MemoryStore> => {
      await Promise.all(Array.from({ length: 2_500 }, () => store.log(0).append(Buffer.from('r'))));
      return store.crash();
    };
    expect(await replayTurns(await filled(memoryStore({ shards: 1 })))).toBe(3); // a turn per 1,000 records
    const seeded = await Promise.all(
      [1, 1, 2].map(async (seed) => replayTurns(await filled(memoryStore({ shards: 1, ioSeed: seed })))),
    );
    expect(seeded[0]).toBe(seeded[1]);
    for (const t of seeded) expect(t).toBeGreaterThanOrEqual(3);
  });

  it('takes records only while it serves: not before its log has replayed, nor once closed', async () => {
    const first = host();
    await first.h.open();
    await first.h.append({ key: 'a', type: 'event' });
    await first.h.append({ key: 'a', type: 'event' });
    await first.h.close();
    const second = host(first.store.crash(), first.clock);
    await expect(second.h.append({ key: 'a', type: 'event' })).rejects.toMatchObject({ code: 'APP_STATE' }); // not recovered
    await second.h.recover();
    expect(second.h.core.state('a')).toEqual({ count: 2 });
    expect(second.outputs).toEqual([]); // recovered, and nothing handed out yet
    await expect(second.h.append({ key: 'a', type: 'event' })).rejects.toMatchObject({ code: 'APP_STATE' });
    second.h.serve();
    expect(second.outputs).toEqual([{ key: 'a', kind: 'resumed', count: 2 }]);
    expect(await second.h.append({ key: 'a', type: 'event' })).toBe(3); // the LSN after the replayed ones
    await second.h.close();
    await expect(second.h.append({ key: 'a', type: 'event' })).rejects.toMatchObject({ code: 'APP_STATE' });
    expect(second.store.log(0).assignedLsn()).toBe(3); // nothing refused reached the log
  });

  it('snapshots the shard and recovers from the snapshot plus the records after it', async () => {
    const store = memoryStore({ shards: 1 });
    const clock = new ManualClock(1_000);
    const outputs: Out[] = [];
    const first = new ShardHost({
      log: store.log(0),
      rules,
      clock,
      onOutput: (o) => outputs.push(o),
      snapshotEvery: 5,
    });
    await first.open();
    for (let i = 0; i < 7; i++) await first.append({ key: `k${i % 3}`, type: 'event' });
    await settle();
    const snap = await store.log(0).readSnapshot();
    expect(snap?.lsn).toBe(6); // after snapshotEvery (5) records and twice as many as keys (3), all durable and handed out
    await first.append({ key: 'k0', type: 'event' });
    const live = [...first.core.keys()].sort().map((k) => [k, first.core.state(k), first.core.timerOf(k)]);
    await first.close();
    const second = new ShardHost({ log: store.crash().log(0), rules, clock, onOutput: () => {} });
    await second.open();
    expect([...second.core.keys()].sort().map((k) => [k, second.core.state(k), second.core.timerOf(k)])).toEqual(live);
    expect(second.core.appliedLsn).toBe(8);
  });

  it('close() waits for the snapshot being written, even when appends asked for another meanwhile', async () => {
    const store = memoryStore({ shards: 1 });
    const log = store.log(0);
    let written = 0;
    // The log, counting snapshots once written: after close() nothing may write in the store's directory.
    const counting = snapshotsThrough(log, async (lsn, state) => {
      await log.writeSnapshot(lsn, state);
      written++;
    });
    const h = new ShardHost({
      log: counting,
      rules,
      clock: new ManualClock(1_000),
      onOutput: () => {},
      snapshotEvery: 5,
    });
    await h.open();
    for (let i = 0; i < 6; i++) await h.append({ key: `k${i % 2}`, type: 'event' }); // the 5th starts a snapshot, the 6th asks again
    await h.close();
    expect(written).toBe(1);
  });

  it('never stamps a record earlier than the last one in the log, after a restart on a clock behind (from the records or a snapshot)', async () => {
    // Rules that only remember when each record happened, as the rules saw it.
    const seenAt: number[] = [];
    const times: Rules<{ n: number }, never> = {
      initial: () => ({ n: 0 }),
      apply: (s, r) => (seenAt.push(r.at), { n: s.n + 1 }),
      retired: () => false,
    };
    let store = memoryStore({ shards: 1 });
    const first = new ShardHost({ log: store.log(0), rules: times, clock: new ManualClock(5_000), onOutput: () => {} });
    await first.open();
    await first.append({ key: 'a', type: 'event' });
    await first.append({ key: 'a', type: 'event', at: 5_040 }); // a record stamped by a clock that read 40 ms on
    await first.close();
    // Restarted on a clock 100 ms behind the log: its records, and its reading of the time, stay at the log's time.
    for (const snapshot of [false, true]) {
      store = store.crash();
      seenAt.length = 0;
      const next = new ShardHost({
        log: store.log(0),
        rules: times,
        clock: new ManualClock(4_940),
        onOutput: () => {},
      });
      await next.open();
      expect(next.now()).toBe(5_040);
      await next.append({ key: 'a', type: 'event' });
      await next.append({ key: 'b', type: 'timer' });
      expect(seenAt.slice(-2)).toEqual([5_040, 5_040]);
      if (snapshot) continue;
      expect(await next.snapshot()).toBe(true); // the next restart finds only the snapshot: it keeps the time too
      await next.close();
    }
  });

  it('spaces snapshots by their size: a large state is snapshotted again only after as many bytes of records', async () => {
    // One key whose state takes about 20,000 bytes, and records of 16 bytes (`["k",0,"e",null]`).
    const big: Rules<{ pad: string; n: number }, never> = {
      initial: () => ({ pad: 'x'.repeat(20_000), n: 0 }),
      apply: (s) => ({ pad: s.pad, n: s.n + 1 }),
      retired: () => false,
    };
    const store = memoryStore({ shards: 1 });
    const h = new ShardHost({
      log: store.log(0),
      rules: big,
      clock: new ManualClock(0),
      onOutput: () => {},
      snapshotEvery: 10,
    });
    await h.open();
    const begun: number[] = [];
    const begin = h.core.beginSnapshot.bind(h.core);
    h.core.beginSnapshot = () => (begun.push(h.core.appliedLsn), begin()); // called at once when a snapshot starts
    const appendTo = async (n: number): Promise<void> => {
      while (store.log(0).assignedLsn() < n) await h.append({ key: 'k', type: 'e', at: 0 });
    };
    await appendTo(1_000); // 990 records (15,840 bytes) after the first snapshot: less than its 20 KB
    expect(begun).toEqual([10]);
    await appendTo(1_400); // past 20 KB since: the next one, and no other
    expect(begun).toEqual([10, expect.any(Number)]);
    expect(begun[1]).toBeGreaterThan(1_260); // 10 + 20,040 / 16
    await h.close();
  });

  it('restarted long after its timers were due, fires every one, parked keys included, each once', async () => {
    const store = memoryStore({ shards: 1 });
    const clock = new ManualClock(1_000);
    const first = new ShardHost({ log: store.log(0), rules, clock, onOutput: () => {}, maxLoadedKeys: 4 });
    await first.open();
    await Promise.all(Array.from({ length: 60 }, (_, i) => first.append({ key: `k${i}`, type: 'event' })));
    expect(first.core.parkedCount).toBeGreaterThan(50);
    await first.close();
    await clock.advance(3_600_000); // the process was down for an hour
    const outputs: Out[] = [];
    const second = new ShardHost({
      log: store.crash().log(0),
      rules,
      clock,
      chunk: 7,
      maxLoadedKeys: 4,
      onOutput: (o) => outputs.push(o),
    });
    await second.open();
    await clock.advance(0); // the manual clock runs the timer the host armed (due at once)
    await settle(30);
    expect(
      outputs
        .filter((o) => o.kind === 'fired')
        .map((o) => o.key)
        .sort(),
    ).toEqual(Array.from({ length: 60 }, (_, i) => `k${i}`).sort());
    expect(second.core.keyCount).toBe(0);
  });

  it('wakes a mass of due timers in bounded chunks, one per turn of the event loop', async () => {
    const { h, outputs, clock } = host(undefined, undefined, 100);
    await h.open();
    await Promise.all(Array.from({ length: 1_000 }, (_, i) => h.append({ key: `k${i}`, type: 'event' })));
    // Count the timer records applied in each synchronous burst.
    const bursts: number[] = [];
    let burst = 0;
    h.core.onEvent((e) => {
      if (e.type !== 'applied' || e.record !== TIMER) return;
      if (burst++ === 0) queueMicrotask(() => void (bursts.push(burst), (burst = 0)));
    });
    await clock.advance(100);
    await settle(30);
    expect(outputs.filter((o) => o.kind === 'fired')).toHaveLength(1_000);
    expect(bursts.reduce((x, y) => x + y, 0)).toBe(1_000);
    expect(Math.max(...bursts)).toBeLessThanOrEqual(100);
  });
});
