import { describe, expect, it } from 'vitest';
import { lanes, pool } from '../../src/dispatch/strategy.js';
import { backoffMs } from '../../src/dispatch/backoff.js';
import { Watermark } from '../../src/dispatch/watermark.js';
import { Workers, type JobRunner } from '../../src/dispatch/workers.js';
import { Gate, seeded, turns } from '../helpers.js';

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
  type J = { key: string | undefined; id: number };
  const drain = (s: ReturnType<ReturnType<typeof lanes>['scheduler']>) => {
    const out: number[] = [];
    for (let j = s.next(); j; j = s.next()) out.push((j as J).id);
    return out;
  };

  it('lanes run a key one job at a time, in order, and other keys at once', () => {
    const s = lanes(4).scheduler<J>();
    const jobs: J[] = [
      { key: 'a', id: 1 },
      { key: 'a', id: 2 },
      { key: 'b', id: 3 },
      { key: undefined, id: 4 },
      { key: 'a', id: 5 },
    ];
    expect(jobs.map((j) => s.push(j))).toEqual([true, false, true, true, false]);
    expect(drain(s)).toEqual([1, 3, 4]); // a's second waits behind its first
    s.done(jobs[2]!);
    expect(drain(s)).toEqual([]);
    s.done(jobs[0]!);
    expect(drain(s)).toEqual([2]);
    s.done(jobs[1]!);
    expect(drain(s)).toEqual([5]);
    s.done(jobs[4]!);
    s.push({ key: 'a', id: 6 });
    expect(drain(s)).toEqual([6]); // a is free again
  });

  it('a pool is one FIFO queue for all workers', () => {
    const s = pool(8).scheduler<J>();
    for (let id = 1; id <= 3; id++) expect(s.push({ key: 'same', id })).toBe(true);
    expect(drain(s)).toEqual([1, 2, 3]);
    expect(pool(8).workers).toBe(8);
  });
});

describe('Workers', () => {
  type J = { key: string | undefined; id: number };
  const job = (id: number, key?: string): J => ({ id, key });
  const runner = (gates: Map<number, Gate>, log: number[]): JobRunner<J> => ({
    begin: () => true,
    call: (j) => gates.get(j.id)?.promise,
    returned: (j) => void log.push(j.id),
    threw: (j) => void log.push(j.id),
  });

  it('runs at most n jobs at once in a pool, finishing in any order', async () => {
    const gates = new Map([1, 2, 3].map((j) => [j, new Gate()]));
    const log: number[] = [];
    const w = new Workers(pool(2), runner(gates, log), () => {});
    for (const j of [1, 2, 3]) w.push(job(j));
    expect(w.room()).toBe(-1);
    gates.get(2)!.open();
    await turns(2);
    expect(log).toEqual([2]);
    gates.get(3)!.open();
    gates.get(1)!.open();
    await turns(3); // enough for both; a worker that stalls fails below rather than hanging
    expect(log).toEqual([2, 3, 1]);
    expect(w.inFlight).toBe(0);
  });

  it('keeps one key in order while another key runs', async () => {
    const gates = new Map([1, 2].map((j) => [j, new Gate()]));
    const log: number[] = [];
    const w = new Workers(lanes(2), runner(gates, log), () => {});
    w.push(job(1, 'a')); // holds key a
    w.push(job(2, 'a'));
    w.push(job(3, 'b'));
    await turns(2);
    expect(log).toEqual([3]);
    gates.get(2)!.open();
    await turns(2);
    expect(log).toEqual([3]); // 2 waits behind 1 in its lane
    gates.get(1)!.open();
    await turns(3);
    expect(log).toEqual([3, 1, 2]);
    expect(w.inFlight).toBe(0);
  });
});
