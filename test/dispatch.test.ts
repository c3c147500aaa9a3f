import { describe, expect, it } from 'vitest';
import { lanes, pool } from '../src/index.js';
import { backoffMs } from '../src/dispatch/backoff.js';
import { Watermark } from '../src/dispatch/watermark.js';
import { Workers, type JobRunner } from '../src/dispatch/workers.js';
import { fnv1a32 } from '../src/core/hash.js';
import { Gate, seeded, turns } from './helpers.js';

describe('Watermark', () => {
  it('is the lowest offset still in flight, or the last delivered + 1', () => {
    const w = new Watermark(0, 10);
    expect(w.watermark()).toBe(10);
    for (const o of [10, 11, 12, 15]) w.delivered(o); // offsets may have gaps
    expect(w.complete(11)).toBe(false);
    expect(w.watermark()).toBe(10);
    expect(w.complete(10)).toBe(true);
    expect(w.watermark()).toBe(12);
    expect(w.complete(15)).toBe(false);
    expect(w.window()).toBe(2);
    expect(w.complete(12)).toBe(true);
    expect(w.watermark()).toBe(16);
    expect(w.window()).toBe(0);
    expect(w.outstanding).toBe(0);
  });

  it('matches a model for random completion orders', () => {
    const random = seeded(42);
    for (let round = 0; round < 50; round++) {
      const w = new Watermark(0, 0);
      const offsets: number[] = [];
      for (let o = 0, i = 0; i < 3000; i++, o += 1 + Math.floor(random() * 3)) {
        offsets.push(o);
        w.delivered(o);
      }
      const pending = new Set(offsets);
      const order = [...offsets].sort(() => random() - 0.5);
      for (const o of order) {
        w.complete(o);
        pending.delete(o);
        if (random() < 0.02 || pending.size === 0) {
          const lowest = pending.size > 0 ? Math.min(...pending) : offsets.at(-1)! + 1;
          expect(w.watermark()).toBe(lowest);
        }
      }
    }
  });
});

describe('backoff', () => {
  it('doubles from initialMs and caps at maxMs', () => {
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffMs(a, 100, 1_000))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });
});

describe('strategies', () => {
  it('lanes hash keys with FNV-1a, not the partitioner, and rotate keyless deliveries', () => {
    const l = lanes(4);
    expect(l.route('cust-7')).toBe(fnv1a32('cust-7') % 4);
    expect([l.route(undefined), l.route(undefined), l.route(undefined), l.route(undefined), l.route(undefined)]).toEqual([0, 1, 2, 3, 0]);
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c); // the published FNV-1a test vector
  });

  it('spreads 1,000 keys over 16 lanes', () => {
    const l = lanes(16);
    const counts = new Array<number>(16).fill(0);
    for (let k = 0; k < 1000; k++) counts[l.route(`c${k}`)]!++;
    expect(Math.min(...counts)).toBeGreaterThan(30);
  });

  it('a pool is one queue for all workers', () => {
    expect(pool(8)).toMatchObject({ workers: 8, queues: 1, workersPerQueue: 8 });
    expect(pool(8).route('x')).toBe(0);
  });
});

describe('Workers', () => {
  const runner = (gates: Map<number, Gate>, log: number[]): JobRunner<number> => ({
    begin: (job) => gates.get(job)?.promise,
    end: (job) => void log.push(job),
  });

  it('runs at most n jobs at once in a pool, finishing in any order', async () => {
    const gates = new Map([1, 2, 3].map((j) => [j, new Gate()]));
    const log: number[] = [];
    const w = new Workers(pool(2), runner(gates, log), () => {}, () => 0);
    for (const j of [1, 2, 3]) w.push(j, undefined);
    expect(w.room()).toBe(-1);
    gates.get(2)!.open();
    await turns(2);
    expect(log).toEqual([2]);
    gates.get(3)!.open();
    gates.get(1)!.open();
    await w.drained();
    expect(log).toEqual([2, 3, 1]);
  });

  it('keeps one lane in order while another lane runs', async () => {
    const gates = new Map([1, 2].map((j) => [j, new Gate()]));
    const log: number[] = [];
    const l = lanes(2);
    const w = new Workers(l, runner(gates, log), () => {}, () => 0);
    const keyA = ['a', 'b', 'c', 'd', 'e'].find((k) => l.route(k) === 0)!;
    const keyB = ['a', 'b', 'c', 'd', 'e'].find((k) => l.route(k) === 1)!;
    w.push(1, keyA); // blocks lane 0
    w.push(2, keyA);
    w.push(3, keyB);
    await turns(2);
    expect(log).toEqual([3]);
    gates.get(2)!.open();
    await turns(2);
    expect(log).toEqual([3]); // 2 waits behind 1 in its lane
    gates.get(1)!.open();
    await w.drained();
    expect(log).toEqual([3, 1, 2]);
  });
});
