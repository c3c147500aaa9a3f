import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  App,
  HandlerOutcome,
  ManualClock,
  MemoryBroker,
  jsonLogger,
  memoryLogger,
  silentLogger,
  subscriber,
  type Context,
} from '../../src/index.js';
import { Concurrency, Counter, Gate, turns } from '../helpers.js';

const app = (
  broker: MemoryBroker,
  include: Parameters<App['withBroker']>[1],
  extra: Partial<ConstructorParameters<typeof App>[0]> = {},
) => new App({ name: 'app', logger: silentLogger, clock: new ManualClock(), ...extra }).withBroker(broker, include);

describe('App lifecycle', () => {
  it('refuses a bad name or timeout, withBroker after start, and start twice', async () => {
    expect(() => new App({ name: '' })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(() => new App({ name: 'a', shutdownTimeoutMs: -1 })).toThrow(/shutdownTimeoutMs/);
    for (const sendTimeoutMs of [0, -1, Infinity, Number.NaN, '5'])
      expect(() => new App({ name: 'a', sendTimeoutMs: sendTimeoutMs as number })).toThrow(
        /sendTimeoutMs must be a finite number > 0/,
      );
    expect(() => new App({ name: 'a', sendTimeoutMs: 5_000 })).not.toThrow();
    const a = app(new MemoryBroker(), () => {});
    await a.start();
    expect(() => a.withBroker(new MemoryBroker(), () => {})).toThrow(expect.objectContaining({ code: 'APP_STATE' }));
    await expect(a.start()).rejects.toMatchObject({ code: 'APP_STATE' });
    await a.stop();
    await a.stop(); // idempotent
  });

  it('send() names an unknown subscriber with UNKNOWN_SUBSCRIBER', async () => {
    const a = app(new MemoryBroker(), (b) => b.include(subscriber('t', async function known() {}).build()));
    await expect(a.send('nope', { key: 'k', event: {} })).rejects.toMatchObject({ code: 'UNKNOWN_SUBSCRIBER' });
    await expect(a.send('known', { key: 'k', event: {} })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('idle() waits for chains of handlers that publish onward', async () => {
    const broker = new MemoryBroker();
    const seen: number[] = [];
    const a = app(broker, (b) =>
      b.include(
        subscriber('hop', async (v: { n: number }, ctx: Context) => {
          seen.push(v.n);
          await turns(1);
          if (v.n < 20) await ctx.publish('hop', { n: v.n + 1 });
        }).build(),
      ),
    );
    await a.start();
    await broker.publish('hop', { n: 0 });
    await a.idle();
    expect(seen).toHaveLength(21);
    await a.stop();
  });

  it('run() serves until SIGTERM, then lets the delivery in flight finish and commits it', async () => {
    const child = spawn(process.execPath, ['--no-warnings', '--loader', 'ts-node/esm', 'test/fixtures/run-app.ts'], {
      env: { ...process.env, SLUICE_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    const handling = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('handling')) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    await handling;
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out.split('\n').filter(Boolean)).toEqual(['handling', 'handled', 'committed 1']);
  }, 60_000);
});

describe('failure handling', () => {
  it('treats a handler that returns something else as a failed attempt, and drops with deadLetter: false', async () => {
    const broker = new MemoryBroker();
    const logger = memoryLogger();
    const calls = new Counter();
    const a = app(
      broker,
      (b) =>
        b.include(
          subscriber('t', () => (calls.add(), 'yes' as never))
            .retry({ attempts: 2, backoff: { initialMs: 0 } })
            .deadLetter(false)
            .build(),
        ),
      { logger },
    );
    await a.start();
    await broker.publish('t', {});
    await a.idle();
    expect(calls.value).toBe(2);
    expect(broker.topics()).not.toContain('t.dlq');
    expect(broker.committed('app', 't')).toEqual([1]);
    expect(
      logger.records.some(
        (r) => r.message.includes('dropped') && String(r.fields.reason).includes('not a HandlerOutcome'),
      ),
    ).toBe(true);
    await a.stop();
  });

  it('honours HandlerOutcome.retry({ delayMs }) over the backoff', async () => {
    const broker = new MemoryBroker();
    const clock = new ManualClock();
    const calls = new Counter();
    const a = app(
      broker,
      (b) =>
        b.include(
          subscriber(
            't',
            () => (calls.add(), calls.value === 1 ? HandlerOutcome.retry({ delayMs: 5_000 }) : undefined),
          ).build(),
        ),
      { clock },
    );
    await a.start();
    await broker.publish('t', {});
    await calls.reach(1);
    await clock.advance(4_999);
    expect(calls.value).toBe(1);
    await clock.advance(1);
    await a.idle();
    expect(calls.value).toBe(2);
    await a.stop();
  });

  /** Fails the first attempt of delivery `failing` (a provider down), and records every delivery that it finishes. */
  function failingOnce(failing: string) {
    const handled: string[] = [];
    const finished = new Counter();
    const failed = new Counter();
    const handler = (v: { id: string }) => {
      if (v.id === failing && failed.value === 0) {
        failed.add();
        throw new Error('provider down');
      }
      handled.push(v.id);
      finished.add();
    };
    return { handled, finished, failed, handler };
  }
  const backoff10s = { attempts: 3, backoff: { initialMs: 10_000 } };

  it('a retry waits for its backoff on no worker: later deliveries run meanwhile, the watermark holds at the retried one', async () => {
    const broker = new MemoryBroker();
    const clock = new ManualClock();
    const { handled, finished, handler } = failingOnce('a');
    const a = app(broker, (b) => b.include(subscriber('t', handler).retry(backoff10s).build()), { clock }); // one worker
    await a.start();
    for (const id of ['a', 'b', 'c']) await broker.publish('t', { id });
    await finished.reach(2);
    expect(handled).toEqual(['b', 'c']); // the one worker was not held by a's backoff
    expect(broker.committed('app', 't')).toEqual([0]); // a holds the watermark
    await clock.advance(10_000);
    await a.idle();
    expect(handled).toEqual(['b', 'c', 'a']);
    expect(broker.committed('app', 't')).toEqual([3]);
    await a.stop();
  });

  it('under lanes a retrying key holds only its own later deliveries; other keys go on', async () => {
    const broker = new MemoryBroker();
    const clock = new ManualClock();
    const { handled, finished, handler } = failingOnce('x1');
    const a = app(broker, (b) => b.include(subscriber('t', handler).workersByKey(2).retry(backoff10s).build()), {
      clock,
    });
    await a.start();
    for (const id of ['x1', 'x2', 'y1', 'y2', 'y3']) await broker.publish('t', { id }, { key: id[0] });
    await finished.reach(3);
    await turns(3);
    expect(handled).toEqual(['y1', 'y2', 'y3']); // x2 waits behind x1's retry
    await clock.advance(10_000);
    await a.idle();
    expect(handled).toEqual(['y1', 'y2', 'y3', 'x1', 'x2']);
    expect(broker.committed('app', 't')).toEqual([5]);
    await a.stop();
  });

  it("stop() does not wait for a retry's backoff: the delivery stays uncommitted and a restart gets it again", async () => {
    const broker = new MemoryBroker();
    const clock = new ManualClock();
    const { handled, failed, handler } = failingOnce('a');
    const sub = () => subscriber('t', handler).retry(backoff10s).build();
    const first = app(broker, (b) => b.include(sub()), { clock });
    await first.start();
    for (const id of ['a', 'b']) await broker.publish('t', { id });
    await failed.reach(1);
    await turns(3);
    expect(handled).toEqual(['b']);
    await first.stop(); // no clock advance: the backoff is not waited for
    expect(broker.committed('app', 't')).toEqual([0]);
    const second = app(broker, (b) => b.include(sub()), { clock });
    await second.start();
    await second.idle();
    expect(handled).toEqual(['b', 'a', 'b']); // what was not committed comes again
    expect(broker.committed('app', 't')).toEqual([2]);
    await second.stop();
  });

  it('validates with a schema decoder (parse) and dead-letters only the bad messages of a batch', async () => {
    const broker = new MemoryBroker();
    const schema = {
      parse: (v: unknown) => {
        if (typeof (v as { n?: unknown }).n !== 'number') throw new Error('n must be a number');
        return v as { n: number };
      },
    };
    const got: number[][] = [];
    const a = app(broker, (b) =>
      b.include(
        subscriber('t', (vs: { n: number }[]) => void got.push(vs.map((v) => v.n)))
          .decode(schema)
          .batch({ max: 10 })
          .build(),
      ),
    );
    await broker.publish('t', { n: 1 });
    await broker.publish('t', { n: 'two' });
    await broker.publish('t', { n: 3 });
    await a.start();
    await a.idle();
    expect(got).toEqual([[1, 3]]);
    expect(broker.messages('t.dlq').map((m) => m.headers['x-sluice-error'])).toEqual([
      'DECODE_FAILED: n must be a number',
    ]);
    expect(broker.committed('app', 't')).toEqual([3]);
    await a.stop();
  });

  it('routes lanes by the key function', async () => {
    const broker = new MemoryBroker();
    const order = new Map<string, number[]>();
    const a = app(broker, (b) =>
      b.include(
        subscriber('t', async (v: { customer: string; n: number }) => {
          await turns(v.n % 3);
          order.set(v.customer, [...(order.get(v.customer) ?? []), v.n]);
        })
          .key((m) => m.value.customer)
          .workersByKey(4)
          .build(),
      ),
    );
    await a.start();
    for (let n = 0; n < 30; n++) await broker.publish('t', { customer: `c${n % 3}`, n }); // no broker key
    await a.idle();
    for (const ns of order.values()) expect(ns).toEqual(ns.slice().sort((x, y) => x - y));
    await a.stop();
  });
});

describe('lanes', () => {
  it('never idle a worker behind another key: a free worker takes the oldest delivery whose key is not running', async () => {
    const broker = new MemoryBroker();
    const c = new Concurrency();
    const gate = new Gate();
    const started: string[] = [];
    const a = app(broker, (b) =>
      b.include(
        subscriber('t', async (v: { key: string; n: number }) => {
          c.enter();
          started.push(`${v.key}${v.n}`);
          await gate.promise;
          c.leave();
        })
          .workersByKey(4)
          .build(),
      ),
    );
    await a.start();
    for (const [key, n] of [
      ['a', 1],
      ['a', 2],
      ['b', 1],
      ['c', 1],
      ['d', 1],
    ] as const)
      await broker.publish('t', { key, n }, { key });
    await c.started.reach(3);
    await turns(3);
    expect(started).toEqual(['a1', 'b1', 'c1']); // a2 waits behind a1; d1 is not read: four are in flight
    gate.open();
    await a.idle();
    expect(started.indexOf('a2')).toBeGreaterThan(started.indexOf('a1'));
    expect(started).toHaveLength(5);
    await a.stop();
  });
});

describe('watermark and rebalance', () => {
  it('commits only up to the lowest delivery still in flight, and pauses the partition at maxUncommitted', async () => {
    const broker = new MemoryBroker();
    const stuck = new Gate();
    const c = new Concurrency();
    const a = app(
      broker,
      (b) =>
        b.include(
          subscriber('t', async (v: { n: number }) => {
            c.enter();
            if (v.n === 0) await stuck.promise;
            c.leave();
          })
            .workers(4)
            .build(),
        ),
      { maxUncommitted: 10 },
    );
    await a.start();
    for (let n = 0; n < 50; n++) await broker.publish('t', { n });
    await c.finished.reach(9);
    await turns(5);
    expect(broker.committed('app', 't')).toEqual([0]); // offset 0 holds the watermark
    expect(broker.readCount('app', 't')).toBe(10); // the window is capped: the partition is paused
    expect(c.finished.value).toBe(9);
    stuck.open();
    await a.idle();
    expect(broker.committed('app', 't')).toEqual([50]);
    await a.stop();
  });

  it('on rebalance, waits for the revoked partitions in flight, commits them, and the new owner starts after', async () => {
    const broker = new MemoryBroker({ topics: { t: 2 } });
    const gate = new Gate();
    const started = new Counter();
    const seen: string[] = [];
    const handler = (who: string) => async (v: { n: number }) => {
      started.add();
      if (who === 'a') await gate.promise;
      seen.push(`${who}${v.n}`);
    };
    const a = app(broker, (b) => b.include(subscriber('t', handler('a')).name('a').workers(4).build()));
    await a.start();
    for (let n = 0; n < 4; n++) await broker.publish('t', { n }, { partition: n % 2 });
    await started.reach(4);
    const b = app(broker, (r) => r.include(subscriber('t', handler('b')).name('b').workers(4).build()));
    const joined = b.start(); // revokes a's partitions: a must finish first
    await turns(3);
    expect(seen).toEqual([]);
    gate.open();
    await joined;
    for (let n = 4; n < 8; n++) await broker.publish('t', { n }, { partition: n % 2 });
    await Promise.all([a.idle(), b.idle()]);
    const ns = seen.map((s) => Number(s.slice(1))).sort((x, y) => x - y);
    expect(ns).toEqual([0, 1, 2, 3, 4, 5, 6, 7]); // none ran twice across the handover
    expect(seen.filter((s) => s.startsWith('b')).sort()).toEqual(['b5', 'b7']); // b got partition 1 after the first four
    expect(broker.committed('app', 't')).toEqual([4, 4]);
    await Promise.all([a.stop(), b.stop()]);
  });
});

describe('logging', () => {
  it('writes structured JSON lines at the chosen level', () => {
    const lines: string[] = [];
    const log = jsonLogger({ level: 'warn', write: (l) => lines.push(l) }).child({ app: 'x' });
    log.info('quiet');
    log.warn('loud', { n: 1, error: new Error('boom') });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 'warn',
      msg: 'loud',
      app: 'x',
      n: 1,
      error: { message: 'boom' },
    });
  });
});

describe('the default logger never throws', () => {
  it('writes BigInts, cycles and errors (with their stack and cause) without throwing', () => {
    const lines: string[] = [];
    const log = jsonLogger({ level: 'info', write: (l) => lines.push(l) });
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    const unreadable = Object.defineProperty({}, 'boom', {
      enumerable: true,
      get: () => {
        throw new Error('getter');
      },
    });
    log.error('odd fields', {
      big: 10n,
      cyclic,
      unreadable,
      error: new Error('outer', { cause: 7n }),
      fn: function named() {},
    });
    const line = JSON.parse(lines[0]!) as { error: { stack: string }; unreadable: { boom: string } };
    expect(line).toMatchObject({
      msg: 'odd fields',
      big: '10n',
      cyclic: { name: 'loop', self: '[Circular]' },
      fn: '[function named]',
    });
    expect(line.error).toMatchObject({ name: 'Error', message: 'outer', cause: '7n' });
    expect(line.error.stack).toContain('outer');
    expect(line.unreadable.boom).toContain('getter');
    const throwing = jsonLogger({
      level: 'info',
      write: () => {
        throw new Error('stderr closed');
      },
    });
    expect(() => throwing.warn('lost')).not.toThrow();
  });

  it('a handler or a key function that throws 10n or a cyclic object does not crash the app: the delivery is dead-lettered', async () => {
    const broker = new MemoryBroker();
    const lines: string[] = [];
    const logger = jsonLogger({ level: 'debug', write: (l) => lines.push(l) });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke(); // every look at it throws
    const a = app(
      broker,
      (b) =>
        b.include(
          /* eslint-disable @typescript-eslint/only-throw-error -- what is not an Error, on purpose */
          subscriber('big', () => {
            throw 10n;
          })
            .retry({ attempts: 1 })
            .build(),
          subscriber('loop', () => {
            throw cyclic;
          })
            .key(() => {
              throw cyclic;
            })
            .workersByKey(2)
            .retry({ attempts: 1 })
            .build(),
          subscriber('proxy', () => {
            throw revoked;
          })
            .retry({ attempts: 1 })
            .build(),
          /* eslint-enable @typescript-eslint/only-throw-error */
        ),
      { logger },
    );
    await a.start();
    await broker.publish('big', { n: 1 });
    await broker.publish('loop', { n: 2 });
    await broker.publish('proxy', { n: 3 });
    await a.idle();
    expect(broker.values('proxy.dlq')).toEqual([{ n: 3 }]);
    expect(broker.values('big.dlq')).toEqual([{ n: 1 }]);
    expect(broker.values('loop.dlq')).toEqual([{ n: 2 }]);
    const logged = lines.map((l) => JSON.parse(l) as unknown);
    expect(logged).toContainEqual(expect.objectContaining({ msg: 'handler failed', error: '10n' }));
    expect(logged).toContainEqual(
      expect.objectContaining({
        msg: 'key function threw (or gave no string); the message key is used instead',
        error: { self: '[Circular]' },
      }),
    );
    await a.stop();
  });

  it('a logger given to the app that throws does not stop its workers', async () => {
    const broker = new MemoryBroker();
    const throwing = {
      debug() {
        throw new Error('x');
      },
      info() {
        throw new Error('x');
      },
      warn() {
        throw new Error('x');
      },
      error() {
        throw new Error('x');
      },
      child() {
        return throwing;
      },
    };
    const a = app(
      broker,
      (b) =>
        b.include(
          subscriber('t', () => {
            throw new Error('fails');
          })
            .retry({ attempts: 1 })
            .build(),
        ),
      { logger: throwing },
    );
    await a.start();
    await broker.publish('t', { n: 1 });
    await a.idle();
    expect(broker.values('t.dlq')).toEqual([{ n: 1 }]);
    await a.stop();
  });
});
