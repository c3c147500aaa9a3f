/**
 * A store written by an earlier release still opens: test/fixtures/pace-store-v1 was written by
 * scripts/fixtures/pace-store.mjs with the code from before the pace codec had a version mark (state version
 * 1). It holds a debounce window waiting, a batch open with an order, runs started and not done, runs waiting
 * for their rate in order, the rate's history, an event ID remembered as dropped, and broker offsets, some in
 * its snapshot and some in the journal after it. Opened by today's code, every run comes due under the run ID
 * its receipts named, and the remembered IDs answer as before.
 */
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  fileStore,
  silentLogger,
  subscriber,
  type PaceOptions,
  type RunInfo,
} from '../../src/index.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/pace-store-v1', import.meta.url));

interface Expected {
  readonly t0: number;
  readonly stoppedAt: number;
  /** As the code that wrote the store answered them. */
  readonly receipts: Record<string, { runId: string; duplicate: boolean } | { dropped: true }>;
}

/** A run as a handler saw it: its subscriber, `ctx.run` and payload (a batch's events, a debounce's latest, the event of a run of its own). */
interface Seen {
  readonly sub: string;
  readonly run: RunInfo;
  readonly payload: unknown;
}

/** The fixture's app, as the script declared it, on a copy of its store (opening a store writes to it). */
function open() {
  const expected = JSON.parse(readFileSync(path.join(FIXTURE, 'expected.json'), 'utf8')) as Expected;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-pace-fixture-'));
  cpSync(path.join(FIXTURE, 'store'), dir, { recursive: true });
  const clock = new ManualClock(expected.stoppedAt);
  const broker = new MemoryBroker();
  const seen: Seen[] = [];
  const handler = (sub: string) => (payload: unknown, ctx: { run?: RunInfo }) =>
    void seen.push({ sub, run: ctx.run!, payload });
  const prio = ({ event }: { event: unknown }) => (event as { prio?: number }).prio ?? 0;
  const paced = (name: string, pace: PaceOptions) =>
    subscriber(name, handler(name)).name(name).workers(1).pace(pace).build();
  const app = new App({
    name: 'fixture',
    logger: silentLogger,
    clock,
    store: fileStore({ dir, shards: 1 }),
  }).withBroker(broker, (b) =>
    b.include(
      paced('deb', { debounce: { window: '1 hour', maxWait: '2 hours' } }),
      paced('bat', { batch: { wait: '1 hour', max: 3 }, order: prio }),
      paced('rate', { perMinute: 2, order: prio, turns: 'key' }),
      paced('drop', { drop: { max: 1, per: '1 minute' } }),
      paced('clicks', { debounce: '1 hour' }),
    ),
  );
  const runId = (label: string): string => (expected.receipts[label] as { runId: string }).runId;
  return { app, clock, seen, expected, runId };
}

describe('a pace store written before the codec was versioned', () => {
  it('opens: runs not done run again, waiting ones and windows come due under their receipts’ run IDs', async () => {
    const { app, clock, seen, expected, runId } = open();
    await app.start();
    await app.idle();
    // Started and not done when the store was written: handed out again, as they were.
    expect(seen.map((s) => [s.sub, s.run.id, s.run.size, s.run.startedAt, s.payload])).toEqual(
      expect.arrayContaining([
        ['bat', runId('b2.1'), 3, expected.t0, [{ n: 1 }, { n: 2 }, { n: 3 }]],
        ['rate', runId('r1.a'), 1, expected.t0, { n: 1 }],
        ['rate', runId('r1.b'), 1, expected.t0, { n: 2 }],
      ]),
    );
    expect(seen).toHaveLength(3);
    expect(runId('b2.2')).toBe(runId('b2.1'));

    // The remembered IDs answer as before: a dropped one is dropped again, a joined one names its run.
    await expect(app.send('drop', { key: 'x1', event: {}, eventId: 'x1-second' })).resolves.toEqual({
      kind: 'dropped',
      dropped: true,
    });
    await expect(app.send('drop', { key: 'x1', event: {}, eventId: 'x1-first' })).resolves.toEqual({
      kind: 'run',
      runId: runId('x1.a'),
      duplicate: true,
    });
    await expect(app.send('deb', { key: 'd1', event: {}, eventId: 'd1-second' })).resolves.toEqual({
      kind: 'run',
      runId: runId('d1.a'),
      duplicate: true,
    });
    expect(runId('d1.b')).toBe(runId('d1.a'));

    // A minute after the rate's history: the waiting runs start, the higher order first.
    seen.length = 0;
    await clock.advance(expected.t0 + 60_000 - clock.now());
    await app.idle();
    expect(seen.map((s) => [s.run.id, s.payload])).toEqual([
      [runId('r1.d'), { n: 4, prio: 9 }],
      [runId('r1.c'), { n: 3, prio: 1 }],
    ]);

    // An hour after their last events (the debounces waited from their second, a second after the first):
    // each window closes into one run, under the ID its first receipt named.
    seen.length = 0;
    await clock.advance(expected.t0 + 3_601_000 - clock.now());
    await app.idle();
    const byId = new Map(seen.map((s) => [s.run.id, s]));
    expect(byId.get(runId('d1.a'))).toMatchObject({ sub: 'deb', run: { size: 4 }, payload: { n: 2 } });
    expect(byId.get(runId('b1.a'))).toMatchObject({
      sub: 'bat',
      run: { size: 2 },
      payload: [{ n: 1, prio: 5 }, { n: 2 }],
    });
    expect(seen.find((s) => s.sub === 'clicks')).toMatchObject({ run: { size: 2 }, payload: { n: 2 } });
    expect(seen).toHaveLength(3);
    await app.stop();
  });
});
