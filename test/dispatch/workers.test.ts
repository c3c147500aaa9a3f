import { describe, expect, it } from 'vitest';
import { lanes, pool } from '../../src/dispatch/strategy.js';
import { Slot, Workers, type JobRunner } from '../../src/dispatch/workers.js';
import { Gate, turns } from '../helpers.js';

type J = { key: string | undefined; id: number };
const job = (id: number, key?: string): J => ({ id, key });

/**
 * A runner whose jobs each wait on a gate of their own, and that records every step: which job began, which
 * ended with what, how many ran at once. Its end may return a gate too (a dead letter's publish still under way).
 */
class Script implements JobRunner<J> {
  readonly began: number[] = [];
  readonly ended: { id: number; result: unknown; failed: boolean }[] = [];
  readonly gates = new Map<number, Gate>();
  readonly after = new Map<number, Gate>();
  readonly outcome = new Map<number, () => unknown>();
  readonly away = new Set<number>();
  running = 0;
  most = 0;
  begin(j: J, slot: Slot<J>): boolean {
    expect(slot.job).toBe(j);
    return true;
  }
  call(j: J): unknown {
    this.began.push(j.id);
    this.running++;
    this.most = Math.max(this.most, this.running);
    const gate = this.gates.get(j.id);
    const outcome = this.outcome.get(j.id);
    if (!gate) {
      this.running--;
      return outcome ? outcome() : `ran ${j.id}`;
    }
    return gate.promise.then(() => {
      this.running--;
      return outcome ? outcome() : `ran ${j.id}`;
    });
  }
  returned(j: J, slot: Slot<J>, result: unknown): Promise<void> | undefined {
    return this.end(j, slot, result, false);
  }
  threw(j: J, slot: Slot<J>, error: unknown): Promise<void> | undefined {
    return this.end(j, slot, error, true);
  }
  private end(j: J, slot: Slot<J>, result: unknown, failed: boolean): Promise<void> | undefined {
    this.ended.push({ id: j.id, result, failed });
    if (this.away.has(j.id)) slot.leavesForRetry = true;
    return this.after.get(j.id)?.promise;
  }
  gate(...ids: number[]): void {
    for (const id of ids) this.gates.set(id, new Gate());
  }
  open(id: number): void {
    this.gates.get(id)!.open();
  }
}

/**
 * Lets ready work run for `n` turns, then asserts that nothing is in flight and that `drained()` resolved:
 * every test below needs only a few turns, so a worker that stalls fails here instead of hanging the test.
 */
async function drains(w: Workers<J>, n = 6): Promise<void> {
  let drained = false;
  void w.drained().then(() => (drained = true));
  await turns(n);
  expect(w.inFlight).toBe(0);
  expect(drained).toBe(true);
}

describe('Workers', () => {
  it('runs at most n at once, reports room, and counts a job finished only when its worker is free', async () => {
    const s = new Script();
    let done = 0;
    const w = new Workers(pool(3), s, () => done++);
    s.gate(1, 2, 3, 4, 5);
    expect(w.room()).toBe(3);
    for (const id of [1, 2, 3, 4, 5]) w.push(job(id));
    expect(w.inFlight).toBe(5);
    expect(w.room()).toBe(-2);
    await turns(3);
    expect(s.began).toEqual([1, 2, 3]);
    let drained = false;
    void w.drained().then(() => (drained = true));
    s.open(2);
    await turns(3);
    expect(s.began).toEqual([1, 2, 3, 4]);
    expect(done).toBe(1);
    expect(w.inFlight).toBe(4);
    expect(drained).toBe(false); // one job finished, four are still in flight
    for (const id of [1, 3, 4, 5]) s.open(id);
    await drains(w);
    expect(s.most).toBe(3);
    expect(done).toBe(5);
    expect(w.inFlight).toBe(0);
    expect(w.room()).toBe(3);
    expect(s.ended.map((e) => e.id)).toEqual([2, 1, 3, 4, 5]);
  });

  it('hands end the value a handler returned, the error it threw (at once or later), or what a thenable gave', async () => {
    const s = new Script();
    const w = new Workers(pool(1), s, () => {});
    const boom = new Error('boom');
    s.outcome.set(1, () => 'plain');
    s.outcome.set(2, () => {
      throw boom;
    });
    s.outcome.set(3, () => Promise.reject(boom));
    s.outcome.set(4, () => ({ then: (ok: (v: unknown) => void) => ok('from a thenable') }));
    s.outcome.set(5, () => null);
    s.outcome.set(6, () => ({ then: 'not a function' }));
    for (const id of [1, 2, 3, 4, 5, 6]) w.push(job(id));
    await drains(w);
    expect(s.ended).toEqual([
      { id: 1, result: 'plain', failed: false },
      { id: 2, result: boom, failed: true },
      { id: 3, result: boom, failed: true },
      { id: 4, result: 'from a thenable', failed: false },
      { id: 5, result: null, failed: false },
      { id: 6, result: { then: 'not a function' }, failed: false },
    ]);
  });

  it('keeps a job in flight, and its worker busy, until what its end returned has settled', async () => {
    const s = new Script();
    let done = 0;
    const w = new Workers(pool(1), s, () => done++);
    const publish = new Gate();
    s.after.set(1, publish);
    w.push(job(1));
    w.push(job(2));
    await turns(3);
    expect(s.ended.map((e) => e.id)).toEqual([1]);
    expect(s.began).toEqual([1]); // job 2 waits for the worker: job 1's dead letter is still being published
    expect(w.inFlight).toBe(2);
    expect(done).toBe(0);
    let drained = false;
    void w.drained().then(() => (drained = true));
    publish.open();
    await turns(3);
    expect(s.began).toEqual([1, 2]);
    expect(drained).toBe(true);
    expect(done).toBe(2);
  });

  it('frees the worker of a job that went away to wait for its retry, and runs it first when it is back', async () => {
    const s = new Script();
    let done = 0;
    const w = new Workers(lanes(1), s, () => done++);
    s.away.add(1);
    w.push(job(1, 'a'));
    w.push(job(2, 'a')); // behind 1 by key
    w.push(job(3, 'b'));
    await turns(3);
    // 1 ran and went away: its worker took 3 (2 waits behind 1's key, which 1 still holds).
    expect(s.began).toEqual([1, 3]);
    expect(w.waitingRetry).toBe(1);
    expect(w.inFlight).toBe(2);
    expect(w.room()).toBe(1 - 2 + 1);
    expect(done).toBe(2); // a freed worker (1 went away) and a finished job (3)
    s.away.clear();
    w.push(job(4, 'c'));
    w.back(job(1, 'a'));
    expect(w.waitingRetry).toBe(0);
    await drains(w);
    expect(s.began).toEqual([1, 3, 1, 4, 2]); // back before anything queued; 2 queued once 1 finished
  });

  it('counts a dropped retry finished and runs what waited behind its key', async () => {
    const s = new Script();
    const w = new Workers(lanes(2), s, () => {});
    s.away.add(1);
    const first = job(1, 'a');
    w.push(first);
    w.push(job(2, 'a'));
    await turns(3);
    expect(s.began).toEqual([1]);
    w.drop(first);
    expect(w.waitingRetry).toBe(0);
    await drains(w);
    expect(s.began).toEqual([1, 2]);
    expect(w.inFlight).toBe(0);
  });

  it('replaces a hung worker: the replacement resumes its job and goes on, the old one exits when it settles', async () => {
    const s = new Script();
    let done = 0;
    const w = new Workers(pool(1), s, () => done++);
    s.gate(1);
    w.push(job(1));
    w.push(job(2));
    await turns(2);
    const hung = w.slots[0]!;
    expect(hung.job?.id).toBe(1);
    const resumed: number[] = [];
    w.replace(hung, (slot) => void resumed.push(slot.job!.id));
    w.replace(hung, () => void resumed.push(-1)); // a second call changes nothing
    expect(w.slots).toHaveLength(1);
    expect(w.slots[0]).not.toBe(hung);
    expect(hung.givenUp).toBe(true);
    await turns(3);
    expect(resumed).toEqual([1]);
    expect(s.began).toEqual([1, 2]);
    expect(w.inFlight).toBe(0);
    s.open(1); // the hung handler settles at last: nothing more happens
    await turns(3);
    expect(s.ended.map((e) => e.id)).toEqual([2]);
    expect(done).toBe(2);
    expect(w.inFlight).toBe(0);
  });

  it('after close, runs what is queued and lets idle workers exit', async () => {
    const s = new Script();
    const w = new Workers(pool(2), s, () => {});
    s.gate(1);
    w.push(job(1));
    w.push(job(2));
    w.push(job(3));
    w.close();
    s.open(1);
    await drains(w);
    expect(s.began.sort()).toEqual([1, 2, 3]);
    w.push(job(4)); // no worker waits any more
    await turns(3);
    expect(s.began).toHaveLength(3);
  });

  it('runs jobs whose handler answers at once back to back, awaiting nothing between them', async () => {
    const s = new Script();
    let done = 0;
    const w = new Workers(pool(1), s, () => done++);
    s.outcome.set(2, () => ({ id: 2 })); // an object that is not a thenable is a plain value too
    s.outcome.set(3, () => undefined);
    for (const id of [1, 2, 3]) w.push(job(id));
    // The push woke the idle worker; the first promise callback after it sees all three finished.
    await Promise.resolve();
    expect(s.ended.map((e) => e.id)).toEqual([1, 2, 3]);
    expect(done).toBe(3);
    expect(w.inFlight).toBe(0);
  });

  it('starts with n idle slots: no job, no attempt, nothing waiting or away, nothing given up on', () => {
    const w = new Workers(lanes(4), new Script(), () => {});
    expect(w.slots).toHaveLength(4);
    expect(new Set(w.slots).size).toBe(4);
    for (const slot of [...w.slots, new Slot<J>()]) {
      expect({ ...slot }).toEqual({
        job: undefined,
        attempts: 0,
        waiting: false,
        leavesForRetry: false,
        seenAttempt: -1,
        seenAtMs: 0,
        startedAtMs: 0,
        givenUp: false,
      });
    }
    expect(w.inFlight).toBe(0);
    expect(w.waitingRetry).toBe(0);
    expect(w.room()).toBe(4);
  });

  it('drained() resolves at once when nothing is in flight, and a worker that went away is woken by back alone', async () => {
    const s = new Script();
    const w = new Workers(lanes(2), s, () => {});
    await drains(w, 1);
    s.away.add(1);
    const first = job(1, 'a');
    w.push(first);
    await turns(2);
    expect(s.began).toEqual([1]);
    expect(w.waitingRetry).toBe(1);
    expect(w.inFlight).toBe(1); // every worker is asleep now, and nothing is queued
    s.away.clear();
    w.back(first);
    await drains(w, 2);
    expect(s.began).toEqual([1, 1]);
    expect(w.waitingRetry).toBe(0);
  });

  it('drops a retry while every worker is busy: what waited behind its key runs once a worker is free', async () => {
    const s = new Script();
    const w = new Workers(lanes(1), s, () => {});
    s.away.add(1);
    s.gate(3);
    const first = job(1, 'a');
    w.push(first);
    w.push(job(2, 'a'));
    w.push(job(3, 'b'));
    await turns(2);
    expect(s.began).toEqual([1, 3]); // 1 went away; its worker holds 3
    w.drop(first);
    expect(w.waitingRetry).toBe(0);
    expect(w.inFlight).toBe(2);
    await turns(2);
    expect(s.began).toEqual([1, 3]);
    s.open(3);
    await drains(w, 3);
    expect(s.began).toEqual([1, 3, 2]);
  });

  it('replaces a replacement that hangs in turn: only the last one finishes the job, once', async () => {
    const s = new Script();
    let done = 0;
    const w = new Workers(pool(1), s, () => done++);
    s.gate(1);
    w.push(job(1));
    await turns(2);
    const hung = w.slots[0]!;
    const slowResume = new Gate();
    w.replace(hung, () => slowResume.promise); // the job's dead letter does not get out either
    const second = w.slots[0]!;
    expect(second.job?.id).toBe(1);
    await turns(2);
    expect(w.inFlight).toBe(1);
    const resumed: number[] = [];
    w.replace(second, (slot) => void resumed.push(slot.job!.id));
    await turns(2);
    expect(resumed).toEqual([1]);
    expect(w.inFlight).toBe(0);
    expect(done).toBe(1);
    slowResume.open(); // the first replacement gets through at last: it was given up on, so it just exits
    s.open(1);
    await turns(3);
    expect(done).toBe(1);
    expect(w.inFlight).toBe(0);
    s.gate(2, 3);
    w.push(job(2));
    w.push(job(3));
    await turns(2);
    expect(s.began).toEqual([1, 2]); // one worker, as before
    s.open(2);
    s.open(3);
    await drains(w);
    expect(done).toBe(3);
  });

  it('a worker replaced while its end was still under way exits when that settles, without finishing the job again', async () => {
    const s = new Script();
    let done = 0;
    const w = new Workers(pool(1), s, () => done++);
    const publish = new Gate();
    s.after.set(1, publish); // job 1's dead letter is being published, for too long
    w.push(job(1));
    await turns(2);
    expect(s.ended.map((e) => e.id)).toEqual([1]);
    const stuck = w.slots[0]!;
    w.replace(stuck, () => {});
    await turns(2);
    expect(w.inFlight).toBe(0);
    expect(done).toBe(1);
    s.gate(2, 3);
    w.push(job(2));
    w.push(job(3));
    await turns(2);
    expect(s.began).toEqual([1, 2]);
    publish.open();
    await turns(3);
    expect(done).toBe(1);
    expect(w.inFlight).toBe(2);
    expect(s.began).toEqual([1, 2]); // the old worker took nothing: 3 still waits for the one worker
    s.open(2);
    s.open(3);
    await drains(w);
    expect(s.began).toEqual([1, 2, 3]);
    expect(s.most).toBe(1);
    expect(done).toBe(3);
  });
});
