import { describe, expect, it } from 'vitest';
import {
  App,
  HandlerOutcome,
  ManualClock,
  MemoryBroker,
  memoryStore,
  silentLogger,
  subscriber,
  type Context,
  type HandlerResult,
  type MemoryStore,
  type PaceOptions,
  type RunInfo,
} from '../../src/index.js';
import { Gate, runIdOf } from '../helpers.js';

const T0 = 1_000_000;

interface Seen {
  readonly payload: unknown;
  readonly run: RunInfo;
  readonly attempt: number;
  readonly at: number;
}

/** An app with one paced subscriber `p` on topic `t`, on ManualClock and a memory store. */
function paced(
  pace: PaceOptions,
  options: {
    store?: MemoryStore;
    clock?: ManualClock;
    broker?: MemoryBroker;
    handler?: (payload: unknown, ctx: Context) => HandlerResult | Promise<HandlerResult>;
    byKey?: number;
    attempts?: number;
  } = {},
) {
  const clock = options.clock ?? new ManualClock(T0);
  const store = options.store ?? memoryStore();
  const broker = options.broker ?? new MemoryBroker();
  const seen: Seen[] = [];
  const handler = async (payload: unknown, ctx: Context) => {
    seen.push({ payload, run: ctx.run!, attempt: ctx.message.attempt, at: clock.now() });
    return options.handler?.(payload, ctx);
  };
  let b = subscriber('t', handler)
    .name('p')
    .pace(pace)
    .retry({ attempts: options.attempts ?? 3, backoff: { initialMs: 100, maxMs: 100 } });
  if (options.byKey) b = b.workersByKey(options.byKey);
  const app = new App({ name: 'pace-test', logger: silentLogger, clock, store }).withBroker(broker, (r) =>
    r.include(b.build()),
  );
  return { app, clock, store, broker, seen };
}

describe('pace: debounce', () => {
  it('collapses starts of a key into one run, window after the latest start, with its event and the receipt run ID', async () => {
    const { app, clock, seen } = paced({ debounce: { window: 1000 } });
    await app.start();
    const r1 = await app.send('p', { key: 'row-1', event: { v: 1 } });
    await clock.advance(500);
    const r2 = await app.send('p', { key: 'row-1', event: { v: 2 } });
    await clock.advance(400);
    const r3 = await app.send('p', { key: 'row-1', event: { v: 3 } });
    expect(r1).toEqual({ kind: 'run', runId: expect.stringMatching(/^row-1@[0-9a-f-]{36}$/), duplicate: false });
    expect([r2, r3]).toEqual([r1, r1]);
    await clock.advance(999); // 1 ms before the latest start's window ends
    await app.idle();
    expect(seen).toEqual([]);
    await clock.advance(1);
    await app.idle();
    expect(seen).toEqual([
      {
        payload: { v: 3 },
        run: { id: runIdOf(r1), key: 'row-1', size: 3, startedAt: T0 + 1900 },
        attempt: 1,
        at: T0 + 1900,
      },
    ]);
    await app.stop();
  });

  it('runs keys independently', async () => {
    const { app, clock, seen } = paced({ debounce: '1 second' });
    await app.start();
    await app.send('p', { key: 'a', event: 'a1' });
    await clock.advance(600);
    await app.send('p', { key: 'b', event: 'b1' });
    await clock.advance(400);
    await app.idle();
    expect(seen.map((s) => s.payload)).toEqual(['a1']);
    await clock.advance(600);
    await app.idle();
    expect(seen.map((s) => [s.payload, s.at - T0])).toEqual([
      ['a1', 1000],
      ['b1', 1600],
    ]);
    await app.stop();
  });

  it('starts the run maxWait after the first start while starts keep coming', async () => {
    const { app, clock, seen } = paced({ debounce: { window: 1000, maxWait: 5000 } });
    await app.start();
    const ids = new Set<string>();
    for (let t = 0; t <= 5600; t += 800) {
      ids.add(runIdOf(await app.send('p', { key: 'k', event: t })));
      await clock.advance(800);
      await app.idle();
    }
    // starts at 0, 800, … 4800 joined the first window, which ran at 5000 with the start of 4800; 5600 opened the next.
    expect(seen[0]).toMatchObject({ payload: 4800, run: { size: 7 }, at: T0 + 5000 });
    expect(ids.size).toBe(2);
    await clock.advance(1000);
    await app.idle();
    expect(seen.map((s) => [s.payload, s.run.size])).toEqual([
      [4800, 7],
      [5600, 1],
    ]);
    await app.stop();
  });

  it('runs once when the clock jumps a day ahead, and never for a window without starts', async () => {
    const { app, clock, seen } = paced({ debounce: { window: '30 seconds', maxWait: '2 minutes' } });
    await app.start();
    await app.send('p', { key: 'k', event: 1 });
    await clock.advance(86_400_000);
    await app.idle();
    await clock.advance(86_400_000);
    await app.idle();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.at).toBe(T0 + 30_000); // the timer fires at its time: the clock passed it, not a later time
    await app.stop();
  });
});

describe('pace: batch', () => {
  it('runs at once when max events arrived, with every event in arrival order', async () => {
    const { app, clock, seen } = paced({ batch: { max: 3, wait: '10 seconds' } });
    await app.start();
    const receipts = [];
    for (const e of ['x', 'y', 'z', 'w']) receipts.push(await app.send('p', { key: 'k', event: e }));
    await app.idle();
    expect(seen).toEqual([
      {
        payload: ['x', 'y', 'z'],
        run: { id: runIdOf(receipts[0]!), key: 'k', size: 3, startedAt: T0 },
        attempt: 1,
        at: T0,
      },
    ]);
    expect(receipts[3]).not.toEqual(receipts[0]); // the fourth opened the next window
    await clock.advance(10_000);
    await app.idle();
    expect(seen.map((s) => s.payload)).toEqual([['x', 'y', 'z'], ['w']]);
    await app.stop();
  });

  it('runs wait after the first event, not after the latest', async () => {
    const { app, clock, seen } = paced({ batch: { max: 100, wait: 1000 } });
    await app.start();
    await app.send('p', { key: 'k', event: 1 });
    await clock.advance(999);
    await app.send('p', { key: 'k', event: 2 });
    await app.idle();
    expect(seen).toEqual([]);
    await clock.advance(1);
    await app.idle();
    expect(seen.map((s) => [s.payload, s.at - T0])).toEqual([[[1, 2], 1000]]);
    await app.stop();
  });

  it('takes deliveries from the broker, commits each once its event is durable, and keys them by partition key', async () => {
    const { app, clock, broker, seen } = paced({ batch: { max: 10, wait: 1000 } });
    await app.start();
    for (let i = 0; i < 6; i++) await broker.publish('t', { i }, { key: i % 2 === 0 ? 'even' : 'odd' });
    await app.idle();
    expect(broker.committed('pace-test', 't')).toEqual([6]);
    expect(seen).toEqual([]);
    await clock.advance(1000);
    await app.idle();
    const byKey = Object.fromEntries(seen.map((s) => [s.run.key, s.payload]));
    expect(byKey).toEqual({ even: [{ i: 0 }, { i: 2 }, { i: 4 }], odd: [{ i: 1 }, { i: 3 }, { i: 5 }] });
    await app.stop();
  });

  it('dead-letters an undecodable delivery with its reason, and paces the rest', async () => {
    const { app, clock, broker, seen } = paced({ batch: { wait: 1000 } });
    await app.start();
    await broker.publish('t', '{not json', { key: 'k' });
    await broker.publish('t', { ok: true }, { key: 'k' });
    await app.idle();
    await clock.advance(1000);
    await app.idle();
    expect(seen.map((s) => s.payload)).toEqual([[{ ok: true }]]);
    expect(broker.messages('t.dlq').map((m) => m.headers['x-sluice-error'])).toEqual([
      expect.stringMatching(/^DECODE_FAILED/),
    ]);
    await app.stop();
  });
});

describe('pace: event IDs', () => {
  it('gives a repeated event ID the first receipt with duplicate: true and adds nothing, within dedup', async () => {
    const { app, clock, seen } = paced({ batch: { max: 100, wait: 1000 }, dedup: '1 minute' });
    await app.start();
    const first = await app.send('p', { key: 'k', event: 'a', eventId: 'e1' });
    const again = await app.send('p', { key: 'k', event: 'a-again', eventId: 'e1' });
    expect(again).toEqual({ ...first, duplicate: true });
    await clock.advance(1000);
    await app.idle();
    // After the window ran, the ID still answers with the run it joined.
    expect(await app.send('p', { key: 'k', event: 'late', eventId: 'e1' })).toEqual({ ...first, duplicate: true });
    await clock.advance(60_000); // dedup after e1 arrived (its duplicates do not renew it): forgotten
    await app.idle();
    const fresh = await app.send('p', { key: 'k', event: 'b', eventId: 'e1' });
    expect(fresh).toMatchObject({ duplicate: false });
    expect(fresh).not.toEqual(first);
    await clock.advance(1000);
    await app.idle();
    expect(seen.map((s) => s.payload)).toEqual([['a'], ['b']]);
    await app.stop();
  });

  it('refuses bad sends clearly: unknown or unpaced names, a key that is not a string, an event that is not JSON', async () => {
    const broker = new MemoryBroker();
    const { app } = paced({ debounce: 10 }, { broker });
    await expect(app.send('p', { key: 'k', event: 1 })).rejects.toMatchObject({ code: 'APP_STATE' });
    await app.start();
    await expect(app.send('nope', { key: 'k', event: 1 })).rejects.toMatchObject({ code: 'UNKNOWN_SUBSCRIBER' });
    await expect(app.send('p', { key: 7 as never, event: 1 })).rejects.toMatchObject({
      code: 'SEND_INVALID',
      message: expect.stringMatching(/key must be a string, got 7/),
    });
    const notJson: unknown = { n: 1n }; // as a JavaScript caller sends it: TypeScript refuses a bigint
    await expect(app.send('p', { key: 'k', event: notJson })).rejects.toMatchObject({
      code: 'SEND_INVALID',
      message: expect.stringMatching(/event must be JSON/),
    });
    await expect(app.send('p', { key: 'k', event: 1, eventId: '' })).rejects.toMatchObject({ code: 'SEND_INVALID' });
    await app.stop();
  });
});

describe('pace: runs', () => {
  it('retries a failed run under the same run ID, then dead-letters it with the reason and never runs it again', async () => {
    const broker = new MemoryBroker();
    const store = memoryStore();
    const { app, clock, seen } = paced(
      { batch: { wait: 1000 } },
      { broker, store, attempts: 2, handler: () => HandlerOutcome.retry() },
    );
    await app.start();
    const runId = runIdOf(await app.send('p', { key: 'k', event: 'e' }));
    await clock.advance(1000);
    while (seen.length < 1) await new Promise((resolve) => setImmediate(resolve));
    await clock.advance(100); // the backoff: then the second and last attempt
    await app.idle();
    expect(seen.map((s) => [s.run.id, s.attempt])).toEqual([
      [runId, 1],
      [runId, 2],
    ]);
    const dead = broker.messages('t.dlq');
    expect(dead).toHaveLength(1);
    expect(dead[0]!.headers).toMatchObject({
      'x-sluice-run-id': runId,
      'x-sluice-error': expect.stringMatching(/exhausted 2 attempts/),
    });
    expect(JSON.parse(dead[0]!.value.toString())).toEqual(['e']);
    await app.stop();
    // A restart on what was durable: the run's end was recorded, so it does not run again.
    const again = paced({ batch: { wait: 1000 } }, { broker: new MemoryBroker(), store: store.crash(), clock });
    await again.app.start();
    await again.app.idle();
    expect(again.seen).toEqual([]);
    await again.app.stop();
  });

  it('runs a started run again after a crash, under its recorded run ID', async () => {
    const gate = new Gate();
    const store = memoryStore();
    const first = paced({ debounce: 1000 }, { store, handler: async () => void (await gate.promise) });
    await first.app.start();
    const runId = runIdOf(await first.app.send('p', { key: 'k', event: 'e' }));
    await first.clock.advance(1000);
    await Promise.resolve();
    expect(first.seen.map((s) => s.run.id)).toEqual([runId]); // running, not finished: then the process dies
    const crashed = store.crash();
    const second = paced({ debounce: 1000 }, { store: crashed, clock: new ManualClock(T0 + 5000) });
    await second.app.start();
    await second.app.idle();
    expect(second.seen).toEqual([
      { payload: 'e', run: { id: runId, key: 'k', size: 1, startedAt: T0 + 1000 }, attempt: 1, at: T0 + 5000 },
    ]);
    await second.app.stop();
    gate.open(); // the first app is gone with its store: it is never stopped
  });

  it("keeps a key's runs in order under workersByKey while other keys run at once", async () => {
    const gates = new Map<string, Gate>();
    const running = new Set<string>();
    let most = 0;
    const { app, clock, seen } = paced(
      { batch: { max: 1 } },
      {
        byKey: 4,
        handler: async (_p, ctx) => {
          running.add(ctx.run!.key);
          most = Math.max(most, running.size);
          const gate = new Gate();
          gates.set(ctx.run!.id, gate);
          await gate.promise;
          running.delete(ctx.run!.key);
        },
      },
    );
    await app.start();
    for (const [key, e] of [
      ['a', 1],
      ['a', 2],
      ['b', 1],
    ] as const)
      await app.send('p', { key, event: e });
    await clock.advance(0);
    for (let i = 0; i < 10 && gates.size < 2; i++) await Promise.resolve();
    expect(seen.map((s) => [s.run.key, s.payload])).toEqual([
      ['a', [1]],
      ['b', [1]],
    ]); // a's second waits behind its first
    for (const g of gates.values()) g.open();
    while (seen.length < 3) await new Promise((resolve) => setImmediate(resolve));
    gates.get(seen[2]!.run.id)!.open();
    await app.idle();
    expect(seen.map((s) => [s.run.key, s.payload])).toEqual([
      ['a', [1]],
      ['b', [1]],
      ['a', [2]],
    ]);
    expect(most).toBe(2);
    await app.stop();
  });
});
