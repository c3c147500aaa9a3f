// The App lifecycle: each call has one defined outcome in each state (the table on the App class).
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  fileStore,
  memoryStore,
  silentLogger,
  subscriber,
  type ConsumeRequest,
  type Store,
} from '../../src/index.js';
import { turns } from '../helpers.js';

/** A memory broker whose connect takes a few turns and can be told to fail, and whose consume can fail. */
class FlakyBroker extends MemoryBroker {
  connectFailures = 0;
  consumeFailures = 0;
  connects = 0;
  override async connect(): Promise<void> {
    this.connects++;
    await turns(2);
    if (this.connectFailures > 0) {
      this.connectFailures--;
      throw new Error('connect refused');
    }
  }
  override async consume(request: ConsumeRequest) {
    await turns(1);
    if (this.consumeFailures > 0) {
      this.consumeFailures--;
      throw new Error('join refused');
    }
    return super.consume(request);
  }
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(extra: { store?: Store } = {}) {
  const broker = new FlakyBroker();
  const handled: unknown[] = [];
  const app = new App({
    name: 'life',
    logger: silentLogger,
    clock: new ManualClock(),
    store: extra.store ?? memoryStore(),
  }).withBroker(broker, (b) =>
    b.include(
      subscriber('jobs', (v: unknown) => void handled.push(v)).build(),
      subscriber('paced', async function paced() {})
        .pace({ debounce: 1000 })
        .build(),
    ),
  );
  /** True when a message published now is read by some member of the app's group. */
  const consuming = async (): Promise<boolean> => {
    const before = broker.readCount('life', 'jobs');
    await broker.publish('jobs', { probe: true });
    await turns(5);
    return broker.readCount('life', 'jobs') > before;
  };
  return { broker, app, handled, consuming };
}

const storeDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-life-'));
  dirs.push(dir);
  return dir;
};

describe('App lifecycle: one outcome per call in each state', () => {
  it('new: stop() stops it for good; a later start() says an App runs once', async () => {
    const { app, consuming } = setup({ store: fileStore({ dir: storeDir() }) });
    await app.stop();
    await expect(app.start()).rejects.toMatchObject({
      code: 'APP_STATE',
      message: expect.stringMatching(/is stopped.*runs once/),
    });
    expect(await consuming()).toBe(false);
  });

  it('stop() during start(): the start unwinds and rejects, nothing keeps consuming, the store LOCK is released, send() is refused', async () => {
    const dir = storeDir();
    const { app, consuming } = setup({ store: fileStore({ dir }) });
    const starting = app.start();
    const stopping = app.stop();
    await expect(starting).rejects.toMatchObject({
      code: 'APP_STATE',
      message: expect.stringContaining('stop() was called during start()'),
    });
    await stopping;
    expect(await consuming()).toBe(false);
    await app.stop(); // still resolves
    await expect(app.send('paced', { key: 'k', event: 1 })).rejects.toMatchObject({ code: 'APP_STATE' });
    // The store is free: another app opens it.
    const other = setup({ store: fileStore({ dir }) });
    await other.app.start();
    expect(await other.consuming()).toBe(true);
    await other.app.stop();
  });

  it('stop() at every step of start() (each turn): the same outcome', async () => {
    for (let at = 0; at < 12; at++) {
      const dir = storeDir();
      const { app, consuming } = setup({ store: fileStore({ dir }) });
      const starting = app.start().then(
        () => 'started',
        (e: { code?: string }) => e.code,
      );
      await turns(at);
      await app.stop();
      const outcome = await starting;
      // A start that finished before the stop was called ran, and the stop stopped it; else it unwound.
      expect(['started', 'APP_STATE']).toContain(outcome);
      expect(await consuming()).toBe(false);
      const other = setup({ store: fileStore({ dir }) });
      await other.app.start(); // the LOCK was released
      await other.app.stop();
    }
  });

  it('a failed start closes what it opened and leaves the app startable again', async () => {
    const dir = storeDir();
    const { app, broker, handled, consuming } = setup({ store: fileStore({ dir }) });
    broker.connectFailures = 1;
    await expect(app.start()).rejects.toThrow('connect refused');
    // One subscription joins, the other's join fails: the one that joined leaves again, and the store closes.
    broker.consumeFailures = 1;
    await expect(app.start()).rejects.toThrow('join refused');
    expect(await consuming()).toBe(false);
    const other = setup({ store: fileStore({ dir }) });
    await other.app.start(); // the failed start released the LOCK
    await other.app.stop();
    await app.start();
    await broker.publish('jobs', { n: 1 });
    await app.idle();
    expect(handled).toContainEqual({ n: 1 });
    await app.stop();
  });

  it('start() while starting, running or stopping is refused; stop() while stopping is the same stop', async () => {
    const { app } = setup({ store: fileStore({ dir: storeDir() }) });
    const first = app.start();
    await expect(app.start()).rejects.toMatchObject({
      code: 'APP_STATE',
      message: expect.stringContaining('starting'),
    });
    await first;
    await expect(app.start()).rejects.toMatchObject({ code: 'APP_STATE', message: expect.stringContaining('running') });
    await expect(app.run()).rejects.toMatchObject({ code: 'APP_STATE' });
    const stop1 = app.stop();
    const stop2 = app.stop();
    expect(stop2).toBe(stop1);
    await expect(app.start()).rejects.toMatchObject({
      code: 'APP_STATE',
      message: expect.stringContaining('stopping'),
    });
    await stop1;
    await expect(app.start()).rejects.toMatchObject({
      code: 'APP_STATE',
      message: expect.stringContaining('runs once'),
    });
  });

  it('run() resolves once stop() is called, while running or while still starting', async () => {
    const { app, consuming } = setup();
    const running = app.run();
    await turns(20);
    await app.stop();
    await running;
    expect(await consuming()).toBe(false);
    const early = setup();
    const runningEarly = early.app.run();
    await early.app.stop(); // during the start: it unwinds, and run() resolves all the same
    await runningEarly;
    expect(await early.consuming()).toBe(false);
  });

  it('any interleaving of start(), stop() and failing connects: every call settles, at most one start succeeds, and after the last stop nothing consumes', async () => {
    const op = fc.oneof(
      fc.constant({ kind: 'start' as const }),
      fc.constant({ kind: 'stop' as const }),
      fc.constant({ kind: 'failNextConnect' as const }),
      fc.integer({ min: 0, max: 6 }).map((n) => ({ kind: 'turns' as const, n })),
    );
    // What the runs reached, so that the test shows its interleavings cover each transition.
    const seen = { started: 0, interrupted: 0, failedConnect: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const { app, broker, consuming } = setup();
        const calls: Promise<{ call: string; ok: boolean; code?: string; message?: string }>[] = [];
        const record = (call: string, p: Promise<void>) =>
          calls.push(
            p.then(
              () => ({ call, ok: true }),
              (e: { code?: string; message?: string }) => ({ call, ok: false, code: e.code, message: e.message }),
            ),
          );
        for (const o of ops) {
          if (o.kind === 'start') record('start', app.start());
          else if (o.kind === 'stop') record('stop', app.stop());
          else if (o.kind === 'failNextConnect') broker.connectFailures++;
          else await turns(o.n);
        }
        const outcomes = await Promise.all(calls);
        await app.stop();
        for (const o of outcomes) {
          if (o.call === 'stop') expect(o.ok).toBe(true);
          else if (!o.ok) expect(o.code === 'APP_STATE' || o.message === 'connect refused').toBe(true);
        }
        expect(outcomes.filter((o) => o.call === 'start' && o.ok).length).toBeLessThanOrEqual(1);
        for (const o of outcomes.filter((x) => x.call === 'start')) {
          if (o.ok) seen.started++;
          else if (o.message?.includes('stop() was called during start()')) seen.interrupted++;
          else if (o.message === 'connect refused') seen.failedConnect++;
          else seen.refused++;
        }
        expect(await consuming()).toBe(false);
        await expect(app.start()).rejects.toMatchObject({ code: 'APP_STATE' });
      }),
      { numRuns: 300 },
    );
    for (const count of Object.values(seen)) expect(count).toBeGreaterThan(10);
  });
});

describe('App lifecycle: a part that fails to close', () => {
  it('stop() closes every other part, ends stopped, and rejects with what failed', async () => {
    class BadCloseBroker extends MemoryBroker {
      override async consume(request: ConsumeRequest) {
        const consumer = await super.consume(request);
        if (request.topic !== 'bad') return consumer;
        const close = consumer.close.bind(consumer);
        return Object.assign(consumer, {
          close: async () => {
            await close();
            throw new Error('close failed');
          },
        });
      }
    }
    const broker = new BadCloseBroker();
    const dir = storeDir();
    const store = fileStore({ dir });
    const app = new App({ name: 'life', logger: silentLogger, clock: new ManualClock(), store }).withBroker(
      broker,
      (b) =>
        b.include(
          subscriber('bad', async function bad() {}).build(),
          subscriber('good', async function good() {}).build(),
          subscriber('paced', async function paced() {})
            .pace({ debounce: 10 })
            .build(),
        ),
    );
    await app.start();
    await expect(app.stop()).rejects.toThrow('close failed');
    await expect(app.start()).rejects.toMatchObject({ code: 'APP_STATE', message: expect.stringContaining('stopped') });
    const before = broker.readCount('life', 'good');
    await broker.publish('good', {});
    await turns(5);
    expect(broker.readCount('life', 'good')).toBe(before); // the good subscription left its group
    const other = setup({ store: fileStore({ dir }) });
    await other.app.start(); // the store was closed: its LOCK is free
    await other.app.stop();
  });
});
