// Lifecycle hooks: onStartup, afterStartup, onShutdown, afterShutdown, on the memory broker.
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  SluiceError,
  memoryLogger,
  memoryStore,
  silentLogger,
  subscriber,
  type ConsumeRequest,
  type Consumer,
} from '../../src/index.js';
import { Gate, turns } from '../helpers.js';

/** A memory broker that tells what the app did with it: connects, joins (consumers) and closes. */
class WatchedBroker extends MemoryBroker {
  readonly trail: string[];
  joined = 0;
  constructor(trail: string[]) {
    super();
    this.trail = trail;
  }
  override async connect(): Promise<void> {
    this.trail.push('broker connected');
  }
  override async consume(request: ConsumeRequest): Promise<Consumer> {
    this.joined++;
    const consumer = await super.consume(request);
    this.trail.push(`joined ${request.topic}`);
    return consumer;
  }
  override async close(): Promise<void> {
    this.trail.push('broker closed');
  }
}

function setup(logger = silentLogger) {
  const trail: string[] = [];
  const broker = new WatchedBroker(trail);
  const handled: unknown[] = [];
  const app = new App({ name: 'hooks', logger, clock: new ManualClock(), store: memoryStore() }).withBroker(
    broker,
    (b) => b.include(subscriber('jobs', (v: unknown) => void handled.push(v))),
  );
  const note = (what: string) => async () => {
    await turns(1);
    trail.push(what);
  };
  return { trail, broker, handled, app, note };
}

describe('lifecycle hooks', () => {
  it('run in the order added, around the start and the stop', async () => {
    const { trail, app, note } = setup();
    app
      .onStartup(note('onStartup 1'))
      .afterStartup(note('afterStartup 1'))
      .onShutdown(note('onShutdown 1'))
      .afterShutdown(note('afterShutdown 1'))
      .onStartup(note('onStartup 2'))
      .afterStartup(note('afterStartup 2'))
      .onShutdown(note('onShutdown 2'))
      .afterShutdown(note('afterShutdown 2'));
    await app.start();
    trail.push('started');
    await app.stop();
    trail.push('stopped');
    expect(trail).toEqual([
      'onStartup 1',
      'onStartup 2',
      'broker connected',
      'joined jobs',
      'afterStartup 1',
      'afterStartup 2',
      'started',
      'onShutdown 1',
      'onShutdown 2',
      'broker closed',
      'afterShutdown 1',
      'afterShutdown 2',
      'stopped',
    ]);
  });

  it('onShutdown runs while the app still serves; afterShutdown once it reads nothing more', async () => {
    const { broker, handled, app } = setup();
    app.onShutdown(async () => {
      await broker.publish('jobs', { during: 'onShutdown' });
      await app.idle();
    });
    await app.start();
    await app.stop();
    expect(handled).toEqual([{ during: 'onShutdown' }]);
    expect(broker.committed('hooks', 'jobs')).toEqual([1]);
  });

  it('a failing onStartup fails start() with STARTUP_HOOK_FAILED and leaves nothing started; a start after the fix works', async () => {
    const { trail, broker, handled, app } = setup();
    let ready = false;
    const ran: string[] = [];
    app
      .onStartup(async function connectDb() {
        ran.push('connectDb');
        if (!ready) throw new Error('db down');
      })
      .onStartup(() => void ran.push('second'))
      .afterShutdown(() => void ran.push('afterShutdown'));
    const failed = await app.start().catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(SluiceError);
    expect(failed).toMatchObject({
      code: 'STARTUP_HOOK_FAILED',
      message: 'App "hooks": onStartup hook #1 (connectDb) failed: db down',
      cause: expect.objectContaining({ message: 'db down' }),
    });
    expect(ran).toEqual(['connectDb']); // the later hooks did not run, nor afterShutdown: nothing was set up
    expect(trail).toEqual([]); // no broker connected, no consumer joined
    expect(broker.joined).toBe(0);
    await broker.publish('jobs', { n: 1 });
    expect(broker.readCount('hooks', 'jobs')).toBe(0); // no member of the group read it
    ready = true;
    await app.start();
    await app.idle();
    expect(handled).toEqual([{ n: 1 }]);
    await app.stop();
    expect(ran).toEqual(['connectDb', 'connectDb', 'second', 'afterShutdown']);
  });

  it('a failing afterStartup fails start(), closes all it opened, and runs afterShutdown', async () => {
    const { trail, app } = setup();
    app.afterStartup(() => {
      throw new Error('not ready');
    });
    app.afterShutdown(() => void trail.push('afterShutdown'));
    await expect(app.start()).rejects.toMatchObject({
      code: 'STARTUP_HOOK_FAILED',
      message: 'App "hooks": afterStartup hook #1 failed: not ready',
    });
    expect(trail).toEqual(['broker connected', 'joined jobs', 'broker closed', 'afterShutdown']);
    await expect(app.start()).rejects.toMatchObject({ code: 'STARTUP_HOOK_FAILED' }); // new again: startable
  });

  it('a failing onShutdown or afterShutdown: the stop completes, the error is logged, and stop() rejects with the first', async () => {
    const logger = memoryLogger();
    const { trail, app } = setup(logger);
    app
      .onShutdown(function drainHttp() {
        throw new Error('http stuck');
      })
      .onShutdown(() => void trail.push('onShutdown 2'))
      .afterShutdown(() => {
        throw new Error('flush failed');
      })
      .afterShutdown(() => void trail.push('afterShutdown 2'));
    await app.start();
    const stopped = await app.stop().catch((error: unknown) => error);
    expect(stopped).toMatchObject({
      code: 'SHUTDOWN_HOOK_FAILED',
      message: 'App "hooks": onShutdown hook #1 (drainHttp) failed: http stuck',
    });
    expect(trail).toEqual(['broker connected', 'joined jobs', 'onShutdown 2', 'broker closed', 'afterShutdown 2']);
    const errors = logger.records.filter((r) => r.level === 'error').map((r) => (r.fields.error as Error).message);
    expect(errors).toEqual([
      'App "hooks": onShutdown hook #1 (drainHttp) failed: http stuck',
      'App "hooks": afterShutdown hook #1 failed: flush failed',
    ]);
    await expect(app.stop()).rejects.toMatchObject({ code: 'SHUTDOWN_HOOK_FAILED' }); // the same stop
    await expect(app.start()).rejects.toMatchObject({ code: 'APP_STATE' }); // stopped for good
  });

  it('stop() during an onStartup hook: the start unwinds once the hooks ran, afterShutdown runs, nothing was opened', async () => {
    const { trail, app, broker } = setup();
    const gate = new Gate();
    app.onStartup(() => gate.promise).afterShutdown(() => void trail.push('afterShutdown'));
    const started = app.start().catch((error: unknown) => error);
    const stopped = app.stop();
    await turns(2);
    expect(trail).toEqual([]);
    gate.open();
    await stopped;
    expect(await started).toMatchObject({ code: 'APP_STATE' });
    expect(trail).toEqual(['afterShutdown']);
    expect(broker.joined).toBe(0);
  });

  it('stop() at any microtask of a start with hooks: every call settles, and nothing consumes after the stop', async () => {
    for (let at = 0; at < 120; at += 3) {
      const { app, broker } = setup();
      app.onStartup(async () => {}).afterStartup(async () => {});
      const starting = app.start().then(
        () => 'started',
        (e: { code?: string }) => e.code,
      );
      for (let i = 0; i < at; i++) await Promise.resolve();
      await app.stop();
      expect(['started', 'APP_STATE']).toContain(await starting);
      const before = broker.readCount('hooks', 'jobs');
      await broker.publish('jobs', { probe: at });
      await turns(3);
      expect(broker.readCount('hooks', 'jobs'), `stop after ${at} microtasks`).toBe(before);
    }
  });

  it('are refused once the app started, and when not functions', async () => {
    const { app } = setup();
    expect(() => app.onStartup('x' as never)).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    await app.start();
    for (const add of [
      () => app.onStartup(() => {}),
      () => app.afterShutdown(() => {}),
      () => app.use((_ctx, next) => next()),
      () => app.usePublish((m, next) => next(m)),
    ])
      expect(add).toThrow(
        expect.objectContaining({ code: 'APP_STATE', message: expect.stringContaining('before start()') }),
      );
    await app.stop();
  });
});
