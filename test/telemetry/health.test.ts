import { afterEach, describe, expect, it } from 'vitest';
import { App, MemoryBroker, SluiceError, subscriber, type Store } from '../../src/index.js';
import { ManualClock, memoryStore, silentLogger } from '../../src/testing.js';
import { Counter, Gate } from '../helpers.js';
import { HttpServer, SERVER_TIMEOUTS } from '../../src/telemetry/http-server.js';

const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop()));
});

function appOf(options: Partial<ConstructorParameters<typeof App>[0]> = {}): App {
  const app = new App({ name: 'health', logger: silentLogger, shutdownTimeoutMs: 1_000, ...options });
  apps.push(app);
  return app;
}

/** A memory store whose open waits for `gate`: a start that is restoring its pace shards. */
function slowStore(gate: Gate): Store {
  const store = memoryStore();
  return Object.assign(Object.create(store) as Store, {
    open: async (...args: Parameters<Store['open']>) => {
      await gate.promise;
      return store.open(...args);
    },
  });
}

describe('app.health()', () => {
  it('is starting until start() resolved (pace shards restored), then ready', async () => {
    const gate = new Gate();
    const paced = subscriber('rows', async () => {})
      .name('rows')
      .pace({ debounce: 1_000 });
    const app = appOf({ clock: new ManualClock(0), store: slowStore(gate) });
    app.withBroker(new MemoryBroker(), (b) => b.include(paced.build()));
    expect((await app.health()).status).toBe('starting');
    const started = app.start();
    const during = await app.health();
    expect([during.status, during.ready, during.live]).toEqual(['starting', false, true]);
    gate.open();
    await started;
    const after = await app.health();
    expect([after.status, after.ready, after.live]).toEqual(['ready', true, true]);
    expect(after.subscribers).toEqual([
      {
        name: 'rows',
        topic: 'rows',
        assignedPartitions: [0],
        paused: [],
        lastPollAgoMs: 0,
        oldestInFlightMs: 0,
        lag: 0,
        lagStale: false,
      },
    ]);
  });

  it('is degraded, not live, while an attempt has run past maxInFlightMs; ready again once it ends', async () => {
    const clock = new ManualClock(0);
    const gate = new Gate();
    const started = new Counter();
    const hanging = subscriber('orders', async () => {
      started.add();
      await gate.promise;
    }).name('orders');
    const broker = new MemoryBroker();
    const app = appOf({ clock, health: { maxInFlightMs: 5_000 } });
    app.withBroker(broker, (b) => b.include(hanging.build()));
    await app.start();
    await broker.publish('orders', { n: 1 });
    await started.reach(1);
    await clock.advance(1_000); // the watchdog's first look sees the attempt
    expect((await app.health()).status).toBe('ready');
    await clock.advance(5_001);
    const late = await app.health();
    expect([late.status, late.live, late.ready]).toEqual(['degraded', false, false]);
    expect(late.subscribers[0]!.oldestInFlightMs).toBe(5_001);
    expect(late.reasons).toEqual(['subscriber orders: an attempt has run for 5001 ms (maxInFlightMs 5000)']);
    gate.open();
    await app.idle();
    expect((await app.health()).status).toBe('ready');
  });

  it('is degraded when a subscriber has not polled for maxPollGapMs (its workers full, messages waiting)', async () => {
    const clock = new ManualClock(0);
    const gate = new Gate();
    const started = new Counter();
    const broker = new MemoryBroker();
    const stuck = subscriber('orders', async () => {
      started.add();
      await gate.promise;
    })
      .name('orders')
      .timeout(600_000);
    const app = appOf({ clock, health: { maxPollGapMs: 2_000, maxInFlightMs: 600_000 } });
    app.withBroker(broker, (b) => b.include(stuck.build()));
    await app.start();
    await broker.publish('orders', { n: 1 });
    await started.reach(1);
    await broker.publish('orders', { n: 2 }); // waits in the broker: the one worker is busy
    expect((await app.health()).subscribers[0]!.lastPollAgoMs).toBe(0);
    await clock.advance(2_500);
    const late = await app.health();
    expect(late.status).toBe('degraded');
    expect(late.subscribers[0]!.lastPollAgoMs).toBe(2_500);
    expect(late.subscribers[0]!.lag).toBe(2);
    gate.open();
    await app.idle();
    const after = await app.health();
    expect([after.status, after.subscribers[0]!.lastPollAgoMs, after.subscribers[0]!.lag]).toEqual(['ready', 0, 0]);
  });

  it('is stopping while stop() lets an attempt finish, then stopped', async () => {
    const gate = new Gate();
    const started = new Counter();
    const broker = new MemoryBroker();
    const slow = subscriber('orders', async () => {
      started.add();
      await gate.promise;
    }).name('orders');
    const app = appOf({ clock: new ManualClock(0) });
    app.withBroker(broker, (b) => b.include(slow.build()));
    await app.start();
    await broker.publish('orders', { n: 1 });
    await started.reach(1);
    const stopped = app.stop();
    const during = await app.health();
    expect([during.status, during.live, during.ready]).toEqual(['stopping', true, false]);
    gate.open();
    await stopped;
    expect(await app.health()).toEqual({ status: 'stopped', live: false, ready: false, reasons: [], subscribers: [] });
  });
});

describe('the HTTP server', () => {
  const get = async (port: number, path: string) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
  };

  it('answers /health/live and /health/ready as probes expect, and /metrics', async () => {
    const clock = new ManualClock(0);
    const gate = new Gate();
    const started = new Counter();
    const broker = new MemoryBroker();
    const sub = subscriber('orders', async () => {
      started.add();
      await gate.promise;
    }).name('orders');
    const app = appOf({ clock, metrics: true, http: { port: 0, host: '127.0.0.1' }, health: { maxInFlightMs: 1_000 } });
    app.withBroker(broker, (b) => b.include(sub.build()));
    await app.start();
    const port = app.httpPort()!;
    expect(await get(port, '/health/live')).toEqual({
      status: 200,
      type: 'application/json',
      body: '{"status":"ready","live":true,"reasons":[]}\n',
    });
    expect((await get(port, '/health/ready')).status).toBe(200);
    await broker.publish('orders', { n: 1 });
    await started.reach(1);
    await clock.advance(1_000);
    await clock.advance(1_500);
    const live = await get(port, '/health/live');
    expect(live.status).toBe(503);
    expect(JSON.parse(live.body)).toMatchObject({ status: 'degraded', live: false });
    expect((await get(port, '/health/ready')).status).toBe(503);
    const metrics = await get(port, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.type).toMatch(/^text\/plain/);
    expect(metrics.body).toMatch(/^sluice_in_flight\{subscriber="orders",topic="orders"\} 1$/m);
    expect((await get(port, '/nothing')).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/health/live`, { method: 'POST' })).status).toBe(405);
    gate.open();
    await app.idle();
    expect((await get(port, '/health/live')).status).toBe(200);
    await app.stop();
    expect(app.httpPort()).toBeUndefined();
    await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
  });

  it('serves no /metrics without metrics', async () => {
    const app = appOf({ http: { port: 0, host: '127.0.0.1' } });
    app.withBroker(new MemoryBroker(), (b) => b.include(subscriber('orders', async () => {}).build()));
    await app.start();
    expect((await get(app.httpPort()!, '/metrics')).status).toBe(404);
  });

  it('refuses a start whose http.port is in use with HTTP_LISTEN_FAILED naming the app and the port; starts once it is free', async () => {
    const first = appOf({ http: { port: 0, host: '127.0.0.1' } });
    first.withBroker(new MemoryBroker(), (b) => b.include(subscriber('orders', async () => {}).build()));
    await first.start();
    const port = first.httpPort()!;
    const second = new App({ name: 'second', logger: silentLogger, http: { port, host: '127.0.0.1' } });
    second.withBroker(new MemoryBroker(), (b) => b.include(subscriber('orders', async () => {}).build()));
    const refused = await second.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(SluiceError);
    expect(refused).toMatchObject({
      code: 'HTTP_LISTEN_FAILED',
      message: expect.stringMatching(new RegExp(`^App "second": http.port ${port} on http.host "127.0.0.1" is in use`)),
      cause: expect.objectContaining({ code: 'EADDRINUSE' }),
    });
    await first.stop();
    await second.start(); // nothing was left open: the app starts once the port is free
    expect(second.httpPort()).toBe(port);
    await second.stop();
  });

  it("bounds a request far below Node's defaults: 5 s for its headers, 10 s in all, looked for every second", async () => {
    const server = new HttpServer({
      health: () => new App({ name: 'x' }).health(),
      registry: () => undefined,
      log: silentLogger,
    });
    await server.listen(0, '127.0.0.1');
    try {
      const node = server.node!;
      expect([node.headersTimeout, node.requestTimeout]).toEqual([5_000, 10_000]);
      expect(SERVER_TIMEOUTS.connectionsCheckingInterval).toBe(1_000);
    } finally {
      await server.close();
    }
  });

  it('answers the probes from the first step of start(): starting while an onStartup hook runs', async () => {
    const inHook = new Counter();
    const gate = new Gate();
    const app = appOf({ http: { port: 0, host: '127.0.0.1' } });
    app.withBroker(new MemoryBroker(), (b) => b.include(subscriber('orders', async () => {}).build()));
    app.onStartup(async () => {
      inHook.add();
      await gate.promise;
    });
    const started = app.start();
    await inHook.reach(1);
    const port = app.httpPort()!;
    const ready = await get(port, '/health/ready');
    expect([ready.status, (JSON.parse(ready.body) as { status: string }).status]).toEqual([503, 'starting']);
    expect((await get(port, '/health/live')).status).toBe(200);
    gate.open();
    await started;
    expect((await get(port, '/health/ready')).status).toBe(200);
  });
});
