/**
 * Pace II at the App, on ManualClock and a memory store: perMinute, drop, order, turns, their combinations
 * with debounce and batch, and waiting starts across a crash.
 */
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  memoryLogger,
  memoryStore,
  subscriber,
  type Context,
  type HandlerResult,
  type LogRecord,
  type MemoryStore,
  type PaceOptions,
  type Receipt,
  type RunInfo,
} from '../../src/index.js';
import { Gate, runIdOf } from '../helpers.js';

const T0 = 1_000_000;
const MIN = 60_000;

interface Seen {
  readonly payload: unknown;
  readonly run: RunInfo;
  readonly at: number;
}

function paced(
  pace: PaceOptions,
  options: {
    store?: MemoryStore;
    clock?: ManualClock;
    broker?: MemoryBroker;
    handler?: (payload: unknown, ctx: Context) => HandlerResult | Promise<HandlerResult>;
    workers?: number;
    byKey?: number;
  } = {},
) {
  const clock = options.clock ?? new ManualClock(T0);
  const store = options.store ?? memoryStore();
  const broker = options.broker ?? new MemoryBroker();
  const logs: LogRecord[] = [];
  const seen: Seen[] = [];
  const handler = async (payload: unknown, ctx: Context) => {
    seen.push({ payload, run: ctx.run!, at: clock.now() });
    return options.handler?.(payload, ctx);
  };
  let b = subscriber('t', handler)
    .name('p')
    .pace(pace)
    .retry({ attempts: 3, backoff: { initialMs: 100, maxMs: 100 } });
  if (options.byKey) b = b.workersByKey(options.byKey);
  else if (options.workers) b = b.workers(options.workers);
  const app = new App({ name: 'pace-ii', logger: memoryLogger(logs), clock, store }).withBroker(broker, (r) =>
    r.include(b.build()),
  );
  return { app, clock, store, broker, seen, logs };
}

const runId = (r: Receipt): string => runIdOf(r);
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A handler held until the test lets each run go, in the order they came. */
function held() {
  const gates: Gate[] = [];
  return {
    handler: async () => {
      const g = new Gate();
      gates.push(g);
      await g.promise;
    },
    async releaseAll(app: App, count: { length: number }, total: number) {
      for (let i = 0; i < 1000 && count.length < total; i++) {
        for (const g of gates) g.open();
        await turn();
      }
      for (const g of gates) g.open();
      await app.idle();
    },
    gates,
  };
}

describe('pace: perMinute', () => {
  it('starts at most n runs of a key in any minute; the others wait, each started when the minute allows', async () => {
    const { app, clock, seen } = paced({ perMinute: 2 });
    await app.start();
    const receipts: Receipt[] = [];
    for (let i = 1; i <= 5; i++) {
      receipts.push(await app.send('p', { key: 'k', event: i }));
      await clock.advance(1000);
    }
    await app.send('p', { key: 'other', event: 'o' }); // another key has its own minute
    await app.idle();
    expect(new Set(receipts.map(runId)).size).toBe(5); // each start is a run of its own
    expect(seen.map((s) => [s.payload, s.at - T0])).toEqual([
      [1, 0],
      [2, 1000],
      ['o', 5000],
    ]);
    await clock.advance(MIN - 5000 - 1); // 1 ms before the first start's minute is over
    await app.idle();
    expect(seen).toHaveLength(3);
    await clock.advance(1);
    await app.idle();
    expect(seen.map((s) => [s.payload, s.at - T0]).slice(3)).toEqual([[3, MIN]]);
    await clock.advance(3 * MIN);
    await app.idle();
    expect(seen.filter((s) => s.run.key === 'k').map((s) => [s.payload, s.run.startedAt - T0])).toEqual([
      [1, 0],
      [2, 1000],
      [3, MIN],
      [4, MIN + 1000],
      [5, 2 * MIN],
    ]);
    for (const s of seen)
      expect(s.run.id).toBe(
        runId(receipts[(s.payload as number) - 1] ?? { kind: 'run', runId: s.run.id, duplicate: false }),
      );
    await app.stop();
  });

  it('lets the waiting start of highest order go first', async () => {
    const { app, clock, seen } = paced({ perMinute: 1, order: ({ event }) => (event as { urgent: number }).urgent });
    await app.start();
    for (const [name, urgent] of [
      ['first', 0],
      ['low', -5],
      ['mid', 0],
      ['high', 9],
    ] as const)
      await app.send('p', { key: 'k', event: { name, urgent } });
    await clock.advance(3 * MIN);
    await app.idle();
    expect(seen.map((s) => [(s.payload as { name: string }).name, (s.at - T0) / MIN])).toEqual([
      ['first', 0],
      ['high', 1],
      ['mid', 2],
      ['low', 3],
    ]);
    await app.stop();
  });

  it('keeps waiting starts across a crash: they start when their minute allows, under their receipts', async () => {
    const store = memoryStore();
    const first = paced({ perMinute: 1 }, { store });
    await first.app.start();
    const receipts: Receipt[] = [];
    for (let i = 1; i <= 3; i++) receipts.push(await first.app.send('p', { key: 'k', event: i }));
    await first.app.idle();
    expect(first.seen.map((s) => s.payload)).toEqual([1]);
    // The process dies with two starts waiting; a new one starts 30 s later on what was durable.
    const second = paced({ perMinute: 1 }, { store: store.crash(), clock: new ManualClock(T0 + 30_000) });
    await second.app.start();
    await second.app.idle();
    expect(second.seen).toEqual([]); // the first run finished and its minute is not over
    await second.clock.advance(30_000);
    await second.app.idle();
    await second.clock.advance(MIN);
    await second.app.idle();
    expect(second.seen.map((s) => [s.payload, s.run.id, s.at - T0])).toEqual([
      [2, runId(receipts[1]!), MIN],
      [3, runId(receipts[2]!), 2 * MIN],
    ]);
    await second.app.stop();
  });
});

describe('pace: drop', () => {
  it('answers a start over the rate dropped, logs it, runs nothing for it, and answers a repeated ID the same', async () => {
    const { app, clock, seen, logs } = paced({ drop: { max: 2, per: '1 hour' } });
    await app.start();
    const a = await app.send('p', { key: 'k', event: 'a' });
    const b = await app.send('p', { key: 'k', event: 'b' });
    const c = await app.send('p', { key: 'k', event: 'c', eventId: 'c-1' });
    expect([a, b]).toEqual([
      { kind: 'run', runId: expect.stringMatching(/^k@/), duplicate: false },
      { kind: 'run', runId: expect.stringMatching(/^k@/), duplicate: false },
    ]);
    expect(c).toEqual({ kind: 'dropped', dropped: true });
    expect(await app.send('p', { key: 'k', event: 'c', eventId: 'c-1' })).toEqual({ kind: 'dropped', dropped: true });
    expect(await app.send('p', { key: 'j', event: 'j' })).toMatchObject({ duplicate: false }); // another key
    await app.idle();
    expect(seen.map((s) => s.payload)).toEqual(['a', 'b', 'j']);
    expect(logs.filter((l) => /dropped/.test(l.message)).map((l) => l.fields)).toEqual([
      expect.objectContaining({ subscriber: 'p', key: 'k', eventId: 'c-1', at: T0 }),
    ]);
    await clock.advance(3_600_000); // the hour of the first start is over
    expect(await app.send('p', { key: 'k', event: 'd' })).toMatchObject({ duplicate: false });
    await app.idle();
    expect(seen.map((s) => s.payload)).toEqual(['a', 'b', 'j', 'd']);
    await app.stop();
  });

  it('acks (commits) a broker delivery that is dropped', async () => {
    const { app, broker, seen, logs } = paced({ drop: { max: 1, per: '1 minute' } });
    await app.start();
    for (let i = 0; i < 4; i++) await broker.publish('t', { i }, { key: 'k' });
    await app.idle();
    expect(broker.committed('pace-ii', 't')).toEqual([4]);
    expect(seen.map((s) => s.payload)).toEqual([{ i: 0 }]);
    expect(logs.filter((l) => /dropped/.test(l.message))).toHaveLength(3);
    await app.stop();
  });

  it('holds the rate across a restart on a clock that reads earlier than the last record', async () => {
    const store = memoryStore();
    const gate = new Gate();
    const first = paced(
      { drop: { max: 2, per: '3 seconds' } },
      { store, handler: (payload) => (payload === 'a' ? gate.promise : undefined) },
    );
    await first.app.start();
    await first.app.send('p', { key: 'k', event: 'a' });
    await first.clock.advance(100);
    await first.app.send('p', { key: 'k', event: 'b' });
    await first.clock.advance(2_950); // the first start's 3 s are over when run a finishes, at T0 + 3,050
    gate.open();
    await first.app.idle();
    // The next process's clock reads 50 ms behind that (another machine's, or stepped back): its start at
    // "T0 + 3,000" would be the third within 3 s of the one at T0 + 100.
    const second = paced(
      { drop: { max: 2, per: '3 seconds' } },
      { store: store.crash(), clock: new ManualClock(T0 + 3_000) },
    );
    await second.app.start();
    const c = await second.app.send('p', { key: 'k', event: 'c' });
    await second.app.idle();
    expect(c).toMatchObject({ duplicate: false });
    // It starts at the log's time, 3 s after the first start: never three starts within 3 s.
    expect([...first.seen, ...second.seen].map((s) => s.run.startedAt - T0)).toEqual([0, 100, 3_050]);
    await second.app.stop();
  });

  it('debounce then drop: starts join the open window; a window over the rate is dropped when it would open', async () => {
    const { app, clock, seen } = paced({ debounce: '1 second', drop: { max: 1, per: '1 minute' } });
    await app.start();
    const r1 = await app.send('p', { key: 'k', event: 1 });
    expect(await app.send('p', { key: 'k', event: 2 })).toEqual(r1);
    await clock.advance(1000);
    await app.idle();
    expect(await app.send('p', { key: 'k', event: 3 })).toEqual({ kind: 'dropped', dropped: true });
    await clock.advance(MIN);
    expect(await app.send('p', { key: 'k', event: 4 })).toMatchObject({ duplicate: false });
    await clock.advance(1000);
    await app.idle();
    expect(seen.map((s) => [s.payload, s.run.size])).toEqual([
      [2, 2],
      [4, 1],
    ]);
    await app.stop();
  });
});

describe('pace: order and turns at the workers', () => {
  it('hands a free worker the waiting run of highest order', async () => {
    const h = held();
    const { app, seen } = paced({ order: ({ event }) => event as number }, { workers: 1, handler: h.handler });
    await app.start();
    await app.send('p', { key: 'a', event: 0 }); // takes the one worker
    for (const [key, o] of [
      ['b', 1],
      ['c', 5],
      ['d', -1],
      ['e', 5],
      ['f', 3],
    ] as const)
      await app.send('p', { key, event: o });
    await h.releaseAll(app, seen, 6);
    expect(seen.map((s) => s.run.key)).toEqual(['a', 'c', 'e', 'f', 'b', 'd']);
    await app.stop();
  });

  it("turns: 'key' — a key with many waiting runs holds another key's single run back by one turn at most", async () => {
    const h = held();
    const { app, seen } = paced({ turns: 'key' }, { workers: 1, handler: h.handler });
    await app.start();
    for (let i = 0; i < 40; i++) await app.send('p', { key: 'busy', event: i });
    await app.send('p', { key: 'quiet', event: 'q' });
    await app.send('p', { key: 'other', event: 'o' });
    await h.releaseAll(app, seen, 42);
    const keys = seen.map((s) => s.run.key);
    expect(keys.slice(0, 5)).toEqual(['busy', 'busy', 'quiet', 'other', 'busy']); // the first ran at once; then one run per key per turn
    expect(seen.filter((s) => s.run.key === 'busy').map((s) => s.payload)).toEqual(
      Array.from({ length: 40 }, (_, i) => i),
    );
    await app.stop();
  });

  it('without turns, runs of equal order go oldest first (the busy key goes before)', async () => {
    const h = held();
    const { app, seen } = paced({ batch: { max: 1 } }, { workers: 1, handler: h.handler });
    await app.start();
    for (let i = 0; i < 5; i++) await app.send('p', { key: 'busy', event: i });
    await app.send('p', { key: 'quiet', event: 'q' });
    await h.releaseAll(app, seen, 6);
    expect(seen.map((s) => s.run.key)).toEqual(['busy', 'busy', 'busy', 'busy', 'busy', 'quiet']);
    await app.stop();
  });

  it('under workersByKey, a key runs one at a time and keys take turns by order', async () => {
    const h = held();
    let running = 0;
    let most = 0;
    const { app, seen } = paced(
      { order: ({ event }) => event as number, turns: 'key' },
      {
        byKey: 2,
        handler: async () => {
          running++;
          most = Math.max(most, running);
          await h.handler();
          running--;
        },
      },
    );
    await app.start();
    for (const o of [1, 2, 3]) await app.send('p', { key: 'a', event: o });
    for (const o of [1, 2]) await app.send('p', { key: 'b', event: o });
    await h.releaseAll(app, seen, 5);
    expect(most).toBe(2);
    expect(seen.filter((s) => s.run.key === 'a').map((s) => s.payload)).toEqual([1, 3, 2]); // its first ran at once; then by order
    expect(seen.filter((s) => s.run.key === 'b').map((s) => s.payload)).toEqual([1, 2]);
    await app.stop();
  });

  it('refuses a start whose order is not a finite number, and dead-letters such a broker delivery', async () => {
    const { app, broker, seen } = paced({ order: ({ event }) => (event as { o: number }).o });
    await app.start();
    await expect(app.send('p', { key: 'k', event: { o: 'high' } })).rejects.toMatchObject({
      code: 'SEND_INVALID',
      message: expect.stringMatching(/subscriber "p": pace\.order must return a finite number, got "high" for key "k"/),
    });
    await broker.publish('t', { o: Number.NaN }, { key: 'k' });
    await app.idle();
    expect(seen).toEqual([]);
    expect(broker.messages('t.dlq')).toHaveLength(1);
    await app.stop();
  });
});

describe('pace: composition', () => {
  it('batch then perMinute, ordered: closed batches wait for the minute, the most urgent first', async () => {
    const { app, clock, seen } = paced({
      batch: { max: 2, wait: '1 second' },
      perMinute: 1,
      order: ({ event }) => ((event as string).startsWith('!') ? 1 : 0),
    });
    await app.start();
    for (const e of ['a', 'b', 'c', 'd', 'e', '!f']) await app.send('p', { key: 'k', event: e });
    await clock.advance(1000);
    await app.idle();
    expect(seen.map((s) => s.payload)).toEqual([['a', 'b']]);
    await clock.advance(2 * MIN);
    await app.idle();
    expect(seen.map((s) => [s.payload, (s.run.startedAt - T0) / 1000])).toEqual([
      [['a', 'b'], 0],
      [['e', '!f'], 60],
      [['c', 'd'], 120],
    ]);
    await app.stop();
  });

  it('debounce then perMinute: a window that closes over the rate waits; the next window gathers meanwhile', async () => {
    const { app, clock, seen } = paced({ debounce: '1 second', perMinute: 1 });
    await app.start();
    await app.send('p', { key: 'k', event: 1 });
    await clock.advance(1000);
    const r2 = await app.send('p', { key: 'k', event: 2 });
    await clock.advance(1000); // window 2 closes, and waits for the minute
    await app.send('p', { key: 'k', event: 3 });
    await app.send('p', { key: 'k', event: 4 });
    await clock.advance(1000); // window 3 closes, and waits behind window 2
    await app.idle();
    expect(seen.map((s) => s.payload)).toEqual([1]);
    await clock.advance(MIN);
    await app.idle();
    await clock.advance(MIN);
    await app.idle();
    expect(seen.map((s) => [s.payload, s.run.size, (s.run.startedAt - T0) / 1000])).toEqual([
      [1, 1, 1],
      [2, 1, 61],
      [4, 2, 121],
    ]);
    expect(seen[1]!.run.id).toBe(runId(r2));
    await app.stop();
  });
});
