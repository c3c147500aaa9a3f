/**
 * The broker contract: what the app relies on from any broker adapter, through the whole App. Every
 * adapter runs this same suite (test/contract/memory.test.ts, and the Kafka adapter's).
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  App,
  ERROR_HEADER,
  HandlerOutcome,
  ManualClock,
  silentLogger,
  subscriber,
  type Broker,
  type Context,
} from '../../src/index.js';
import { Concurrency, Counter, Gate, seeded, turns } from '../helpers.js';
import { SpyBroker } from './spy.js';

/** How a suite gets brokers. Several `connect()`s reach one underlying broker (several app instances). */
export interface BrokerFixture {
  /** A new client of the shared broker under test. */
  connect(): Broker;
  createTopic(name: string, partitions: number): Promise<void>;
}

/**
 * This run's mark on the names it makes: a broker may be shared with other runs (another engineer's, a
 * second CI job) and keep topics and groups from earlier ones, so a fixed name would meet their messages
 * or join their group and trigger rebalances in both.
 */
const run = `${process.pid}-${randomBytes(4).toString('hex')}`;
let seq = 0;
/** A topic name no other test, and no other run, uses. */
export const uniqueTopic = (base: string): string => `${base}-${run}-${++seq}`;
/** A consumer group (the app's name) no other test, and no other run, uses. */
export const uniqueGroup = (base: string): string => `${base}-${run}-${++seq}`;

export function brokerContract(name: string, fixture: BrokerFixture): void {
  describe(`broker contract: ${name}`, () => {
    const apps: App[] = [];
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.stop()));
    });

    const makeApp = (
      appName: string,
      broker: Broker,
      include: Parameters<App['withBroker']>[1],
      extra: { clock?: ManualClock; shutdownTimeoutMs?: number } = {},
    ): App => {
      const app = new App({
        name: appName,
        clock: extra.clock ?? new ManualClock(),
        logger: silentLogger,
        shutdownTimeoutMs: extra.shutdownTimeoutMs ?? 1_000,
      }).withBroker(broker, include);
      apps.push(app);
      return app;
    };

    it('delivers every message once, in order per key, with key and headers', async () => {
      const topic = uniqueTopic('order');
      await fixture.createTopic(topic, 3);
      const broker = fixture.connect();
      const seen: { key: string | undefined; n: number; h: string | undefined }[] = [];
      const app = makeApp(uniqueGroup('g-order'), broker, (b) =>
        b.include(
          subscriber(
            topic,
            (v: { n: number }, ctx: Context) =>
              void seen.push({ key: ctx.message.key, n: v.n, h: ctx.message.headers['x-test'] }),
          ).build(),
        ),
      );
      await app.start();
      for (let n = 0; n < 60; n++)
        await broker.publish(topic, { n }, { key: `k${n % 5}`, headers: { 'x-test': `h${n}` } });
      await app.idle();
      expect(seen.map((s) => s.n).sort((a, b) => a - b)).toEqual([...Array(60).keys()]);
      for (const s of seen) expect(s).toMatchObject({ key: `k${s.n % 5}`, h: `h${s.n}` });
      for (let k = 0; k < 5; k++) {
        const ns = seen.filter((s) => s.key === `k${k}`).map((s) => s.n);
        expect(ns).toEqual([...ns].sort((a, b) => a - b));
      }
    });

    it('gives every group every message, and shares partitions between members of one group', async () => {
      const topic = uniqueTopic('groups');
      await fixture.createTopic(topic, 4);
      const byMember = [new Map<number, number>(), new Map<number, number>(), new Map<number, number>()];
      const sub = (i: number) =>
        subscriber(topic, (v: { n: number }, ctx: Context) => void byMember[i]!.set(v.n, ctx.message.partition))
          .name(`m${i}`)
          .build();
      const sharedGroup = uniqueGroup('g-shared');
      const a1 = makeApp(sharedGroup, fixture.connect(), (b) => b.include(sub(0)));
      const a2 = makeApp(sharedGroup, fixture.connect(), (b) => b.include(sub(1)));
      const other = makeApp(uniqueGroup('g-other'), fixture.connect(), (b) => b.include(sub(2)));
      await a1.start();
      await a2.start();
      await other.start();
      const producer = fixture.connect();
      for (let n = 0; n < 80; n++) await producer.publish(topic, { n }, { key: `key-${n}` });
      await Promise.all([a1.idle(), a2.idle(), other.idle()]);
      const shared = [...byMember[0]!.keys(), ...byMember[1]!.keys()].sort((a, b) => a - b);
      expect(shared).toEqual([...Array(80).keys()]); // each message once across the group
      expect([...byMember[2]!.keys()].sort((a, b) => a - b)).toEqual([...Array(80).keys()]);
      const parts = (m: Map<number, number>) => new Set(m.values());
      const p0 = parts(byMember[0]!);
      const p1 = parts(byMember[1]!);
      expect(p0.size).toBeGreaterThan(0);
      expect(p1.size).toBeGreaterThan(0);
      for (const p of p0) expect(p1.has(p)).toBe(false); // a partition has one owner
    });

    it('runs exactly n at once under load, never n + 1, and reads no more than n from the broker', async () => {
      const topic = uniqueTopic('pool');
      await fixture.createTopic(topic, 2);
      const spy = new SpyBroker(fixture.connect());
      const c = new Concurrency();
      const gates: Gate[] = [];
      const app = makeApp(uniqueGroup('g-pool'), spy, (b) =>
        b.include(
          subscriber(topic, async () => {
            c.enter();
            const g = new Gate();
            gates.push(g);
            await g.promise;
            c.leave();
          })
            .workers(4)
            .build(),
        ),
      );
      await app.start();
      for (let n = 0; n < 40; n++) await spy.publish(topic, { n });
      await c.started.reach(4);
      await turns(5);
      expect(c.active).toBe(4);
      expect(spy.taken).toBe(4); // back-pressure: nothing read beyond the four in flight
      for (let released = 0; released < 40; released++) {
        await c.started.reach(Math.min(40, released + 4));
        await turns(2);
        expect(c.active).toBeLessThanOrEqual(4);
        expect(spy.taken - c.finished.value).toBeLessThanOrEqual(4);
        gates[released]!.open();
      }
      await app.idle();
      expect(c.finished.value).toBe(40);
      expect(c.max).toBe(4);
    });

    it('keeps one key in order under lanes, with many keys and random latencies, and runs keys at once', async () => {
      const topic = uniqueTopic('lanes');
      await fixture.createTopic(topic, 3);
      const broker = fixture.connect();
      const random = seeded(7);
      const c = new Concurrency();
      const seen = new Map<string, number[]>();
      const app = makeApp(uniqueGroup('g-lanes'), broker, (b) =>
        b.include(
          subscriber(topic, async (v: { key: string; n: number }) => {
            c.enter();
            await turns(Math.floor(random() * 4));
            const list = seen.get(v.key) ?? [];
            list.push(v.n);
            seen.set(v.key, list);
            c.leave();
          })
            .workersByKey(8)
            .build(),
        ),
      );
      await app.start();
      const keys = 100;
      const perKey = 10;
      for (let n = 0; n < perKey; n++)
        for (let k = 0; k < keys; k++) await broker.publish(topic, { key: `c${k}`, n }, { key: `c${k}` });
      await app.idle();
      expect(seen.size).toBe(keys);
      for (const list of seen.values()) expect(list).toEqual([...Array(perKey).keys()]);
      expect(c.max).toBeGreaterThan(1);
      expect(c.max).toBeLessThanOrEqual(8);
    });

    it('spreads keyless deliveries over every free lane: n at once, never more', async () => {
      const topic = uniqueTopic('keyless');
      await fixture.createTopic(topic, 1);
      const broker = fixture.connect();
      const c = new Concurrency();
      const gate = new Gate();
      const app = makeApp(uniqueGroup('g-keyless'), broker, (b) =>
        b.include(
          subscriber(topic, async () => {
            c.enter();
            await gate.promise;
            c.leave();
          })
            .workersByKey(3)
            .build(),
        ),
      );
      await app.start();
      for (let n = 0; n < 6; n++) await broker.publish(topic, { n });
      await c.started.reach(3); // keyless deliveries are not held behind one another: three lanes, all at once
      expect(c.active).toBe(3);
      gate.open();
      await app.idle();
      expect(c.finished.value).toBe(6);
      expect(c.max).toBe(3);
    });

    it('retries a failing handler with backoff, counting attempts, until it succeeds', async () => {
      const topic = uniqueTopic('retry');
      await fixture.createTopic(topic, 1);
      const broker = fixture.connect();
      const clock = new ManualClock();
      const attempts: number[] = [];
      const calls = new Counter();
      const app = makeApp(
        uniqueGroup('g-retry'),
        broker,
        (b) =>
          b.include(
            subscriber(topic, (_v: unknown, ctx: Context) => {
              attempts.push(ctx.message.attempt);
              calls.add();
              if (ctx.message.attempt < 3) throw new Error('payment provider down');
            })
              .retry({ attempts: 5, backoff: { initialMs: 100, maxMs: 1_000 } })
              .build(),
          ),
        { clock },
      );
      await app.start();
      await broker.publish(topic, { n: 1 });
      await calls.reach(1);
      await clock.advance(99);
      expect(attempts).toEqual([1]); // the backoff has not run out
      await clock.advance(1);
      await calls.reach(2);
      await clock.advance(199);
      expect(attempts).toEqual([1, 2]); // doubled
      await clock.advance(1);
      await app.idle();
      expect(attempts).toEqual([1, 2, 3]);
    });

    it('dead-letters exhausted, rejected and undecodable deliveries with the reason, and keeps serving', async () => {
      const topic = uniqueTopic('dlq');
      await fixture.createTopic(topic, 1);
      await fixture.createTopic(`${topic}.dlq`, 1);
      const broker = fixture.connect();
      const dead: { value: string; reason: string | undefined }[] = [];
      const handled: string[] = [];
      const calls = new Map<string, number>();
      const app = makeApp(uniqueGroup('g-dlq'), broker, (b) => {
        b.include(
          subscriber(topic, (v: { kind: string }) => {
            calls.set(v.kind, (calls.get(v.kind) ?? 0) + 1);
            if (v.kind === 'throws') throw new Error('card declined');
            if (v.kind === 'rejects') return HandlerOutcome.reject('not ours');
            handled.push(v.kind);
            return HandlerOutcome.ack();
          })
            .retry({ attempts: 2, backoff: { initialMs: 0, maxMs: 0 } })
            .build(),
        );
        b.include(
          subscriber(
            `${topic}.dlq`,
            (raw: Uint8Array, ctx: Context) =>
              void dead.push({ value: Buffer.from(raw).toString(), reason: ctx.message.headers[ERROR_HEADER] }),
          )
            .decode((raw) => raw)
            .build(),
        );
      });
      await app.start();
      await broker.publish(topic, { kind: 'throws' });
      await broker.publish(topic, { kind: 'rejects' });
      await broker.publish(topic, '{not json');
      await broker.publish(topic, { kind: 'fine' });
      await app.idle();
      expect(handled).toEqual(['fine']);
      expect(calls.get('throws')).toBe(2);
      expect(calls.get('rejects')).toBe(1);
      // The retried delivery waits for its backoff on no worker, so the others may be dead-lettered first.
      expect(dead).toHaveLength(3);
      const reasonOf = (value: string) => dead.find((d) => d.value.includes(value))?.reason;
      expect(reasonOf('throws')).toMatch(/exhausted 2 attempts: card declined/);
      expect(reasonOf('rejects')).toBe('not ours');
      expect(reasonOf('{not json')).toMatch(/^DECODE_FAILED: /);
    });

    it('stop() lets in-flight work finish, commits it, and a restart gets only what was not finished', async () => {
      const topic = uniqueTopic('stop');
      await fixture.createTopic(topic, 1);
      const broker = fixture.connect();
      const c = new Concurrency();
      const gate = new Gate();
      const done: number[] = [];
      const sub = () =>
        subscriber(topic, async (v: { n: number }) => {
          c.enter();
          if (v.n < 2) await gate.promise; // the first two are in flight when stop() begins
          done.push(v.n);
          c.leave();
        })
          .workers(2)
          .build();
      const group = uniqueGroup('g-stop');
      const first = makeApp(group, broker, (b) => b.include(sub()));
      await first.start();
      for (let n = 0; n < 6; n++) await broker.publish(topic, { n });
      await c.started.reach(2);
      const stopped = first.stop();
      await turns(3);
      expect(done).toEqual([]); // still waiting for the two in flight
      gate.open();
      await stopped;
      expect(done.sort()).toEqual([0, 1]);
      const second = makeApp(group, fixture.connect(), (b) => b.include(sub()));
      await second.start();
      await second.idle();
      expect(done.sort()).toEqual([0, 1, 2, 3, 4, 5]); // nothing finished was delivered again
    });

    it('stop() aborts a hanging handler after shutdownTimeoutMs and leaves its delivery uncommitted', async () => {
      const topic = uniqueTopic('hang');
      await fixture.createTopic(topic, 1);
      const clock = new ManualClock();
      const started = new Counter();
      let aborted = false;
      const group = uniqueGroup('g-hang');
      const hanging = makeApp(
        group,
        fixture.connect(),
        (b) =>
          b.include(
            subscriber(topic, (_v: unknown, ctx: Context) => {
              started.add();
              ctx.signal.addEventListener('abort', () => (aborted = true));
              return new Promise<void>(() => {}); // never settles
            }).build(),
          ),
        { clock, shutdownTimeoutMs: 5_000 },
      );
      await hanging.start();
      const broker = fixture.connect();
      await broker.publish(topic, { n: 1 });
      await started.reach(1);
      const stopped = hanging.stop();
      await clock.advance(4_999);
      expect(aborted).toBe(false);
      await clock.advance(1);
      await stopped;
      expect(aborted).toBe(true);
      const redelivered: number[] = [];
      const next = makeApp(group, fixture.connect(), (b) =>
        b.include(subscriber(topic, (v: { n: number }) => void redelivered.push(v.n)).build()),
      );
      await next.start();
      await next.idle();
      expect(redelivered).toEqual([1]);
    });

    it('times out a hung attempt, retries it, and keeps other keys moving', async () => {
      const topic = uniqueTopic('timeout');
      await fixture.createTopic(topic, 1);
      const broker = fixture.connect();
      const clock = new ManualClock();
      const done: string[] = [];
      const firstTry = new Counter();
      const app = makeApp(
        uniqueGroup('g-timeout'),
        broker,
        (b) =>
          b.include(
            subscriber(topic, (v: { key: string }, ctx: Context) => {
              if (v.key === 'stuck' && ctx.message.attempt === 1) {
                firstTry.add();
                return new Promise<void>(() => {});
              }
              done.push(`${v.key}#${ctx.message.attempt}`);
            })
              .workersByKey(2)
              .timeout(500)
              .retry({ attempts: 3, backoff: { initialMs: 10, maxMs: 10 } })
              .build(),
          ),
        { clock },
      );
      await app.start();
      await broker.publish(topic, { key: 'stuck' }, { key: 'stuck' });
      await firstTry.reach(1);
      for (let i = 0; i < 5; i++) await broker.publish(topic, { key: `free${i}` }, { key: `free${i}` });
      await clock.advance(500);
      expect(done).not.toContain('stuck#2'); // not before timeoutMs
      await clock.advance(150); // the watchdog looks every timeoutMs / 4: it fires by 1.25 × timeoutMs
      await app.idle();
      expect(done).toContain('stuck#2');
      expect(done.filter((d) => d.startsWith('free'))).toHaveLength(5);
    });

    it('hands batch handlers arrays of at most max, each batch a task of its own', async () => {
      const topic = uniqueTopic('batch');
      await fixture.createTopic(topic, 1);
      const broker = fixture.connect();
      const sizes: number[] = [];
      const seen: number[] = [];
      const app = makeApp(uniqueGroup('g-batch'), broker, (b) =>
        b.include(
          subscriber(topic, (vs: { n: number }[]) => void (sizes.push(vs.length), seen.push(...vs.map((v) => v.n))))
            .batch({ max: 5 })
            .workers(2)
            .build(),
        ),
      );
      for (let n = 0; n < 23; n++) await broker.publish(topic, { n });
      await app.start();
      await app.idle();
      expect(Math.max(...sizes)).toBeLessThanOrEqual(5);
      expect(seen.sort((a, b) => a - b)).toEqual([...Array(23).keys()]);
    });

    it('publishes onward from a handler with ctx.publish', async () => {
      const topic = uniqueTopic('onward');
      await fixture.createTopic(topic, 1);
      await fixture.createTopic(`${topic}.out`, 1);
      const broker = fixture.connect();
      const out: { n: number; key: string | undefined }[] = [];
      const app = makeApp(uniqueGroup('g-onward'), broker, (b) => {
        b.include(
          subscriber(topic, (v: { n: number }, ctx: Context) =>
            ctx.publish(`${topic}.out`, { n: v.n * 10 }, { key: `k${v.n}` }),
          ).build(),
        );
        b.include(
          subscriber(
            `${topic}.out`,
            (v: { n: number }, ctx: Context) => void out.push({ n: v.n, key: ctx.message.key }),
          ).build(),
        );
      });
      await app.start();
      for (let n = 1; n <= 3; n++) await broker.publish(topic, { n });
      await app.idle();
      expect(out.sort((a, b) => a.n - b.n)).toEqual([
        { n: 10, key: 'k1' },
        { n: 20, key: 'k2' },
        { n: 30, key: 'k3' },
      ]);
    });
  });
}
