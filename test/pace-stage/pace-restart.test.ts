/**
 * A restart of a paced app on a store of several shards, with windows that came due while it was down and
 * runs cut off by the stop: every shard replays before a run leaves, and every run's end is journaled in
 * its key's shard. On a real file store (its replay takes real I/O) and on a memory store, with time moving
 * while the app starts.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  fileStore,
  memoryStore,
  silentLogger,
  subscriber,
  type RunInfo,
  type ShardLog,
  type Store,
} from '../../src/index.js';
import { Gate, snapshotsThrough } from '../helpers.js';

const T0 = 1_000_000;
const KEYS = 300;

/** An app with one batched subscriber `ev` on `store`, recording each run it sees (by run ID). */
function app(store: Store, clock: ManualClock, handler: (run: RunInfo) => Promise<void> | void = () => {}) {
  const runs: RunInfo[] = [];
  const a = new App({ name: 'restart', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
    new MemoryBroker(),
    (b) =>
      b.include(
        subscriber('ev', (_payload, ctx) => {
          runs.push(ctx.run!);
          return handler(ctx.run!);
        })
          .name('ev')
          .workers(8)
          .pace({ batch: { wait: '200 ms' } })
          .build(),
      ),
  );
  return { app: a, runs };
}

/** Starts the app while time goes on, as it does during a real start: due timers fire as soon as they are armed. */
async function startWhileTimePasses(a: App, clock: ManualClock): Promise<void> {
  let started = false;
  const starting = a.start().finally(() => (started = true));
  while (!started) await clock.advance(0);
  await starting;
}

/**
 * Life 1 journals windows for KEYS keys: half closed and running (their handlers held) when it stops, half
 * still open. Life 2 starts after the open windows came due. Returns the run IDs receipts named, each with
 * the events acknowledged for it, the runs life 2 saw, and its clock.
 */
async function twoLives(store: () => Store, clock: ManualClock) {
  const held = new Gate();
  const one = app(store(), clock, () => held.promise);
  await one.app.start();
  const receipts = new Map<string, number>();
  const send = async (keys: number, round: number) => {
    const got = await Promise.all(
      Array.from({ length: keys }, (_, i) => one.app.send('ev', { key: `key-${i}`, event: { i, round } })),
    );
    for (const r of got) if ('runId' in r) receipts.set(r.runId, (receipts.get(r.runId) ?? 0) + 1);
  };
  await send(KEYS / 2, 1);
  await clock.advance(200); // these windows close: their runs start, and wait for the held handlers
  await send(KEYS, 2); // new windows, for every key: open when the app stops
  const stopping = one.app.stop();
  await clock.advance(1_000); // the shutdown timeout: the held runs are cut off, to run again after a restart
  await stopping;
  held.open();
  expect(receipts.size).toBe(KEYS + KEYS / 2);

  clock = new ManualClock(T0 + 60_000); // the open windows came due while the app was down
  const two = app(store(), clock);
  await startWhileTimePasses(two.app, clock);
  await two.app.idle();
  await clock.advance(1_000);
  await two.app.idle();
  await two.app.stop();
  return { receipts, runs: two.runs, clock };
}

/** Each run's end was journaled in its key's shard: a third life runs nothing again. */
async function nothingRunsAgain(store: Store, clock: ManualClock): Promise<void> {
  const three = app(store, clock);
  await startWhileTimePasses(three.app, clock);
  await clock.advance(60_000);
  await three.app.idle();
  await three.app.stop();
  expect(three.runs).toEqual([]);
}

describe('pace: a restart on several shards', () => {
  it.each([
    [4, 'no snapshot', undefined],
    [3, 'a snapshot every 40 records', 40],
  ])(
    'runs every window once after a graceful stop, on a file store of %i shards, %s',
    async (shards, _, snapshotEvery) => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-restart-'));
      const store = () => fileStore({ dir, shards, segmentBytes: 4096, snapshotEvery });
      const { receipts, runs, clock } = await twoLives(store, new ManualClock(T0));
      // Every acknowledged window ran in life 2, once: the runs cut off by the stop, the windows due while down.
      expect(new Set(runs.map((r) => r.id))).toEqual(new Set(receipts.keys()));
      expect(runs.length).toBe(receipts.size);
      for (const r of runs) expect(r.size).toBe(receipts.get(r.id));
      await nothingRunsAgain(store(), clock);
    },
    60_000,
  );

  it('runs every window once after a crash, on a memory store whose reads take turns of the event loop', async () => {
    let current = memoryStore({ shards: 4, ioSeed: 7 });
    const { receipts, runs, clock } = await twoLives(() => (current = current.crash()), new ManualClock(T0));
    expect(new Set(runs.map((r) => r.id))).toEqual(new Set(receipts.keys()));
    expect(runs.length).toBe(receipts.size);
    await nothingRunsAgain(current.crash(), clock);
  }, 60_000);

  it('closes the store only once the snapshot being written is, even past the shutdown timeout', async () => {
    // A snapshot goes on writing, renaming and deleting files: once the store is closed and its lock let
    // go, the next life would find segments deleted under its replay, or its snapshot replaced by this one.
    const inner = memoryStore({ shards: 1 });
    const log = inner.log(0);
    const begun = new Gate();
    const release = new Gate();
    const events: string[] = [];
    const held = snapshotsThrough(log, async (lsn, state) => {
      begun.open();
      await release.promise;
      await log.writeSnapshot(lsn, state);
      events.push('snapshot written');
    });
    const store: Store = {
      shards: 1,
      snapshotEvery: 4,
      open: () => inner.open(),
      log: () => held,
      close: async () => void events.push('store closed'),
    };
    const clock = new ManualClock(T0);
    const one = app(store, clock);
    await one.app.start();
    for (let i = 0; i < 4; i++) await one.app.send('ev', { key: `k${i % 2}`, event: i });
    await begun.promise;
    const stopping = one.app.stop();
    await clock.advance(1_000); // the shutdown timeout passes with the snapshot still being written
    expect(events).toEqual([]);
    release.open();
    await stopping;
    expect(events).toEqual(['snapshot written', 'store closed']);
  });

  it('lets the store go when a shard cannot be recovered, so that a fixed store can be opened again', async () => {
    const inner = memoryStore({ shards: 2 });
    let closed = 0;
    const damaged = (shard: number): ShardLog => {
      const log = inner.log(shard);
      if (shard === 0) return log;
      return {
        shard,
        append: (record) => log.append(record),
        assignedLsn: () => log.assignedLsn(),
        durableLsn: () => log.durableLsn(),
        replay: (from, visit) => log.replay(from, visit),
        readSnapshot: async () => ({ lsn: 5, state: Buffer.from('{"lsn":4,"keys":[]}') }), // it names another LSN than its file
        writeSnapshot: (lsn, state) => log.writeSnapshot(lsn, state),
      };
    };
    const store: Store = { shards: 2, open: () => inner.open(), log: damaged, close: async () => void closed++ };
    const { app: a } = app(store, new ManualClock(T0));
    await expect(a.start()).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    expect(closed).toBe(1);
  });
});

describe('pace: a delivery journaled with its payload as it came', () => {
  /**
   * JSON texts a decoder reads and JSON.stringify never writes: spacing, a repeated key, escapes, `__proto__`;
   * and numbers JSON writes otherwise (-0 as 0, 1e400, which parses to Infinity, as null).
   */
  const payloads = [
    '{ "k": 1, "k": 2, "n": 1.50 }',
    '\t[ "\\u00e9\\ud800", {"__proto__": {"x": 1}} ]\n',
    '"caf\u00e9 \u{1F600}"',
    '[-0, 1e400, {"deep": [-0.0]}]',
  ];
  /** What every life runs with: each payload's value as JSON writes it (as a snapshot keeps it). */
  const expected = payloads.map((p): unknown => JSON.parse(JSON.stringify(JSON.parse(p))));

  it.each([
    ['replayed from its log', undefined],
    ['restored from a snapshot', 1],
  ])('runs with the same values live and after a restart, %s (file store)', async (_how, snapshotEvery) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-payload-'));
    const lifeOf = (broker: MemoryBroker, clock: ManualClock) => {
      const runs: unknown[] = [];
      const store = fileStore({ dir, ...(snapshotEvery === undefined ? {} : { snapshotEvery }) });
      const a = new App({ name: 'payload', logger: silentLogger, clock, store }).withBroker(broker, (b) =>
        b.include(
          subscriber('in', (events: unknown) => void runs.push(events))
            .name('in')
            .pace({ batch: { wait: '1 s' } })
            .build(),
        ),
      );
      return { app: a, runs };
    };
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker();
    const publish = async (key: string) => {
      for (const p of payloads) await broker.publish('in', Buffer.from(p), { key });
    };
    const one = lifeOf(broker, clock);
    await one.app.start();
    await publish('live');
    await one.app.idle();
    await clock.advance(1_000);
    await one.app.idle();
    expect(one.runs).toEqual([expected]); // toEqual compares numbers with Object.is: a -0 would show
    await publish('restarted');
    await one.app.idle();
    await one.app.stop(); // its window still open

    const two = lifeOf(broker, clock);
    await two.app.start();
    await clock.advance(1_000);
    await two.app.idle();
    expect(two.runs).toEqual([expected]);
    await two.app.stop();
  });
});
