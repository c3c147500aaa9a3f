/**
 * What a running app shows of its paced subscribers (`inspect`, `inspectRuns`, `inspectKey`) and the actions
 * on runs not started: `pause` and `resume` (durable: a record in each shard), `cancel`.
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
  type PaceOptions,
  type Store,
} from '../../src/index.js';
import { pauseKey, RESUME } from '../../src/pace/state.js';
import { encodeRecord } from '../../src/pace-stage/journal-record.js';

interface Ev {
  n: number;
  o?: number;
}

/** An app with one paced subscriber `ev` on `store`; `ran` gets each run's key and events, in start order. */
function paced(store: Store, clock: ManualClock, pace: PaceOptions, workers = 1) {
  const ran: { key: string; events: number[] }[] = [];
  const app = new App({ name: 'inspect', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
    new MemoryBroker(),
    (b) =>
      b.include(
        subscriber('ev', (payload: Ev | Ev[], ctx) => {
          ran.push({ key: ctx.run!.key, events: (Array.isArray(payload) ? payload : [payload]).map((e) => e.n) });
        })
          .name('ev')
          .workers(workers)
          .pace(pace)
          .build(),
      ),
  );
  return { app, ran };
}

describe('app.inspect', () => {
  it('counts open windows per shard and pages them newest first, reading only the keys of the page', async () => {
    const clock = new ManualClock(1_000);
    const { app } = paced(memoryStore({ shards: 2 }), clock, { debounce: '1 minute' });
    await app.start();
    for (let k = 0; k < 7; k++) {
      await app.send('ev', { key: `k${k}`, event: { n: k } });
      await clock.advance(1);
    }
    await app.send('ev', { key: 'k3', event: { n: 33 } }); // the same window, one more event
    const seen = await app.inspect();
    const ev = seen.subscribers.find((s) => s.name === 'ev')!;
    expect(ev.pace?.kind).toBe('debounce');
    expect(ev.pace?.paused).toBe(false);
    expect(ev.pace?.shards.map((s) => s.shard)).toEqual([0, 1]);
    expect(ev.pace?.shards.reduce((n, s) => n + s.openWindows, 0)).toBe(7);

    const pages: string[][] = [];
    let after: string | undefined;
    do {
      const page = await app.inspectRuns('ev', { stage: 'gathering', limit: 3, ...(after ? { after } : {}) });
      pages.push(page.runs.map((r) => r.key));
      for (const r of page.runs) {
        expect(r.stage).toBe('gathering');
        expect(r.waitingFor).toBe('debounce');
        expect(r.runId.startsWith(`${r.key}@`)).toBe(true);
        expect(r.closesAt).toBe(r.openedAt! + 60_000 + (r.key === 'k3' ? 4 : 0));
      }
      after = page.next;
    } while (after !== undefined);
    expect(pages.flat().sort()).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6']);
    expect(pages.slice(0, -1).every((p) => p.length === 3)).toBe(true);
    // Within a shard, newest first.
    const perShard = new Map<number, number[]>();
    const all = await app.inspectRuns('ev', { limit: 100 });
    for (const r of all.runs) perShard.set(r.shard, [...(perShard.get(r.shard) ?? []), r.openedAt!]);
    for (const opened of perShard.values()) expect(opened).toEqual([...opened].sort((a, b) => b - a));

    const k3 = await app.inspectKey('ev', 'k3');
    expect(k3?.runs).toHaveLength(1);
    expect(k3?.runs[0]).toMatchObject({ stage: 'gathering', events: 2, key: 'k3' });
    expect(k3?.timerAt).toBe(k3?.runs[0]?.closesAt);
    expect(await app.inspectKey('ev', 'nobody')).toBeUndefined();
    await app.stop();
  });

  it('refuses an unknown subscriber, one without pace, a bad page, and any call before start', async () => {
    const clock = new ManualClock(0);
    const app = new App({ name: 'inspect', logger: silentLogger, clock, store: memoryStore() }).withBroker(
      new MemoryBroker(),
      (b) =>
        b.include(
          subscriber('ev', () => {})
            .name('ev')
            .pace({ debounce: 10 })
            .build(),
          subscriber('plain', () => {})
            .name('plain')
            .build(),
        ),
    );
    await expect(app.pause('ev')).rejects.toMatchObject({ code: 'APP_STATE' });
    await app.start();
    await expect(app.pause('nope')).rejects.toMatchObject({ code: 'UNKNOWN_SUBSCRIBER' });
    await expect(app.inspectRuns('plain')).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(app.inspectRuns('ev', { limit: 0 })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(app.inspectRuns('ev', { after: 'garbage' })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(app.inspectRuns('ev', { stage: 'done' as never })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    const plain = (await app.inspect()).subscribers.find((s) => s.name === 'plain')!;
    expect(plain.pace).toBeUndefined();
    expect(plain.deadLetterTopic).toBe('plain.dlq');
    await app.stop();
  });
});

describe('app.pause and app.resume', () => {
  it('holds every run that would start, journals events meanwhile, and starts them all on resume', async () => {
    const clock = new ManualClock(1_000);
    const { app, ran } = paced(memoryStore({ shards: 3 }), clock, { debounce: 10 });
    await app.start();
    expect(await app.pause('ev')).toEqual([0, 1, 2]);
    expect(await app.pause('ev')).toEqual([]); // paused already
    for (let k = 0; k < 5; k++) await app.send('ev', { key: `k${k}`, event: { n: k } });
    await clock.advance(10);
    await app.idle();
    expect(ran).toEqual([]);
    const seen = (await app.inspect()).subscribers[0]!.pace!;
    expect(seen.paused).toBe(true);
    expect(seen.shards.reduce((n, s) => n + s.waitingStarts, 0)).toBe(5);
    const waiting = await app.inspectRuns('ev', { stage: 'waiting' });
    expect(waiting.runs.map((r) => r.waitingFor)).toEqual(['pause', 'pause', 'pause', 'pause', 'pause']);
    expect(await app.resume('ev')).toEqual([0, 1, 2]);
    await app.idle();
    expect(ran.map((r) => r.key).sort()).toEqual(['k0', 'k1', 'k2', 'k3', 'k4']);
    expect((await app.inspectRuns('ev', { stage: 'waiting' })).runs).toEqual([]);
    await app.stop();
  });

  it('starts the runs a pause held highest order first across keys, and with turns the keys take turns', async () => {
    for (const turns of [false, true]) {
      const clock = new ManualClock(1_000);
      const { app, ran } = paced(memoryStore({ shards: 1 }), clock, {
        order: ({ event }) => (event as Ev).o ?? 0,
        ...(turns ? { turns: 'key' as const } : {}),
      });
      await app.start();
      await app.pause('ev');
      const sends: [string, number, number][] = [
        ['a', 1, 0],
        ['a', 2, 0],
        ['a', 3, 5],
        ['b', 4, 0],
        ['b', 5, 0],
        ['c', 6, 9],
      ];
      for (const [key, n, o] of sends) await app.send('ev', { key, event: { n, o } });
      await app.idle();
      expect(ran).toEqual([]);
      await app.resume('ev');
      await app.idle();
      const order = ran.map((r) => r.events[0]);
      // c's 9, a's 5 (a key's own runs go highest order first), then the zeros: in the order the keys began
      // waiting, each key's runs together — or, with turns, one run a key at a time.
      expect(order).toEqual(turns ? [6, 3, 4, 1, 5, 2] : [6, 3, 1, 2, 4, 5]);
      await app.stop();
    }
  });

  it('survives a restart: the runs wait until resume, on the same file store', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-pause-'));
    const clock = new ManualClock(1_000);
    const first = paced(fileStore({ dir, shards: 2 }), clock, { batch: { max: 2, wait: 10 } });
    await first.app.start();
    await first.app.pause('ev');
    await first.app.send('ev', { key: 'x', event: { n: 1 } });
    await first.app.send('ev', { key: 'x', event: { n: 2 } }); // a full batch: ready, held by the pause
    await first.app.send('ev', { key: 'y', event: { n: 3 } }); // open
    await first.app.idle();
    await first.app.stop();
    expect(first.ran).toEqual([]);

    const second = paced(fileStore({ dir, shards: 2 }), clock, { batch: { max: 2, wait: 10 } });
    await second.app.start();
    await clock.advance(10); // y's window closes: it waits too
    await second.app.idle();
    expect(second.ran).toEqual([]);
    expect((await second.app.inspect()).subscribers[0]!.pace!.paused).toBe(true);
    expect((await second.app.inspectKey('ev', 'x'))?.runs[0]).toMatchObject({ stage: 'waiting', waitingFor: 'pause' });
    await second.app.resume('ev');
    await second.app.idle();
    expect(second.ran.map((r) => r.events).sort()).toEqual([[1, 2], [3]]);
    await second.app.stop();
  });

  it('after a resume cut short (its record durable, its wake not done), the next start starts the held runs', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-pause-'));
    const clock = new ManualClock(1_000);
    const first = paced(fileStore({ dir, shards: 1 }), clock, { debounce: 10 });
    await first.app.start();
    await first.app.pause('ev');
    for (const key of ['x', 'y', 'z']) await first.app.send('ev', { key, event: { n: 1 } });
    await clock.advance(10);
    await first.app.idle();
    await first.app.stop();
    // What a crash right after the resume record leaves: the record, and no run started.
    const store = fileStore({ dir, shards: 1 });
    await store.open({ app: 'inspect', subscribers: ['ev'] });
    await store.log(0).append(encodeRecord({ key: pauseKey('ev'), at: clock.now(), type: RESUME }));
    await store.close();

    const second = paced(fileStore({ dir, shards: 1 }), clock, { debounce: 10 });
    await second.app.start();
    await second.app.idle();
    expect(second.ran.map((r) => r.key).sort()).toEqual(['x', 'y', 'z']);
    expect((await second.app.inspect()).subscribers[0]!.pace!.paused).toBe(false);
    await second.app.stop();
  });
});

describe('app.cancel', () => {
  it('cancels an open window and a waiting run, which never run; a run started is not cancelled', async () => {
    const clock = new ManualClock(1_000);
    const { app, ran } = paced(memoryStore(), clock, { debounce: 10, perMinute: 1 });
    await app.start();
    const open = await app.send('ev', { key: 'k', event: { n: 1 } });
    expect(open.kind).toBe('run');
    const runId = (open as { runId: string }).runId;
    expect(await app.cancel('ev', runId)).toBe('window');
    expect(await app.cancel('ev', runId)).toBeNull(); // gone
    await clock.advance(10);
    await app.idle();
    expect(ran).toEqual([]);

    const first = (await app.send('ev', { key: 'k', event: { n: 2 } })) as { runId: string };
    await clock.advance(10);
    await app.idle();
    const second = (await app.send('ev', { key: 'k', event: { n: 3 } })) as { runId: string };
    await clock.advance(10); // its window closes; the rate (one a minute) holds it
    await app.idle();
    expect(ran.map((r) => r.events)).toEqual([[2]]);
    expect((await app.inspectKey('ev', 'k'))?.runs).toEqual([
      expect.objectContaining({ runId: second.runId, stage: 'waiting', waitingFor: 'rate' }),
    ]);
    expect(await app.cancel('ev', first.runId)).toBeNull(); // it ran
    expect(await app.cancel('ev', second.runId)).toBe('waiting');
    await clock.advance(60_000);
    await app.idle();
    expect(ran.map((r) => r.events)).toEqual([[2]]);
    expect(await app.cancel('ev', 'no-at-sign')).toBeNull();
    await app.stop();
  });
});
