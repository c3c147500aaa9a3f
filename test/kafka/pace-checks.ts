/**
 * The invariants of the multi-process pace scenarios, over every line every instance printed. `counts[k]` is
 * how many events key `k<k>` was given (numbered 0…counts[k]-1); every one was acknowledged (its offset
 * committed, or its send resolved).
 */
import { expect } from 'vitest';
import { DROP_MAX, PER_MINUTE, type Instance, type Mode, type RunLine, type SentReceipt } from './pace-instances.js';

/** The marks of a frozen instance (micros): SIGSTOP and SIGCONT. */
export interface Frozen {
  readonly id: string;
  readonly stoppedAt: number;
  continuedAt: number;
}

/** What the checks look at. */
export interface Observed {
  readonly mode: Mode;
  readonly instances: readonly Instance[];
  readonly counts: readonly number[];
  readonly frozen: readonly Frozen[];
  /** The partition (and shard) of a pace key. */
  readonly partitionOf: (key: string) => number;
  /** `Date.now()` before the first event was published or sent. */
  readonly startedAt: number;
}

/** Every check of the file's header, in turn. */
export function checkRuns(o: Observed): Map<string, RunLine> {
  const runs = checkRunIds(o.instances);
  const byKey = new Map<string, RunLine[]>();
  for (const run of runs.values()) byKey.set(run.key, [...(byKey.get(run.key) ?? []), run]);
  for (const [k, n] of o.counts.entries()) {
    // A key's runs in the order they first started.
    const own = (byKey.get(`k${k}`) ?? []).sort((a, b) => a.t - b.t);
    checkEvents(o.mode, `k${k}`, own, n);
  }
  if (o.mode === 'per-minute') checkPerMinute(byKey, o.startedAt);
  checkOverlaps(o.instances, o.frozen);
  checkFrozen(o);
  return runs;
}

/** The events that must be in finished runs once the stream stopped (the rest: none, or in one of them). */
export function wantedSeqs(mode: Mode, n: number): number[] {
  if (mode === 'debounce') return n === 0 ? [] : [n - 1];
  return Array.from({ length: mode === 'drop' ? Math.min(n, DROP_MAX) : n }, (_, s) => s);
}

/**
 * A run ID is one run: one key, the same events at every attempt and on every instance; and every run that
 * started finished (by its ID, on some instance). Returns the runs by ID (their first line).
 */
function checkRunIds(instances: readonly Instance[]): Map<string, RunLine> {
  const runLines = instances.flatMap((i) => i.lines.filter((l): l is RunLine => l.run !== undefined));
  const runs = new Map<string, RunLine>();
  for (const l of runLines) {
    const first = runs.get(l.run) ?? l;
    runs.set(l.run, first);
    expect(l.run.startsWith(`${l.key}@`), l.run).toBe(true);
    expect({ key: l.key, seqs: l.seqs, size: l.size }, `run ${l.run}`).toEqual({
      key: first.key,
      seqs: first.seqs,
      size: first.size,
    });
  }
  const finished = new Set(runLines.filter((l) => l.ev === 'end').map((l) => l.run));
  const unfinished = [...runs.keys()].filter((id) => !finished.has(id));
  expect(unfinished, 'runs started and never finished').toEqual([]);
  return runs;
}

/** A key's runs (in the order they started) against the `n` events it was given, by the subscriber's pace. */
function checkEvents(mode: Mode, key: string, own: readonly RunLine[], n: number): void {
  if (mode === 'debounce') return checkDebounced(key, own, n);
  // Every event in exactly one run: no event twice under two run IDs, none missing; under `drop`, the first
  // DROP_MAX of the key (its events reach its partition in order), each a run, and no other.
  const seqs = own.flatMap((r) => r.seqs).sort((a, b) => a - b);
  expect(seqs, `${key}: the events of its runs`).toEqual(wantedSeqs(mode, n));
  if (mode === 'drop' || mode === 'per-minute')
    expect(
      own.map((r) => r.size),
      `${key}: each event a run`,
    ).toEqual(own.map(() => 1));
}

/**
 * Each run carries its window's latest start, and counts the starts since the previous run's: every start in
 * exactly one window, and the key's last run carries its latest event.
 */
function checkDebounced(key: string, own: readonly RunLine[], n: number): void {
  const carried = own.map((r) => ({ seq: r.seqs[0], size: r.size }));
  let previous = -1;
  const expected = carried.map(({ seq }) => {
    const size = seq! - previous;
    previous = seq!;
    return { seq, size };
  });
  expect(carried, `${key}: each run's event and size`).toEqual(expected);
  expect(own.at(-1)?.seqs[0] ?? -1, `${key}: its last run carries its latest event`).toBe(n - 1);
}

/**
 * `perMinute` across instances: no key had more than PER_MINUTE runs start in the minute after the first
 * event was published. A run starts (by the app's clock) no earlier than the record that started it, which
 * is after the first publish, and a key's (PER_MINUTE+1)th run starts at least a minute after its first: so
 * however slow the machine, no more than PER_MINUTE runs' first attempts read a clock before `startedAt` +
 * 1 minute. (An instance whose clock is ahead reads it later.)
 */
function checkPerMinute(byKey: ReadonlyMap<string, RunLine[]>, startedAt: number): void {
  for (const [key, runs] of byKey) {
    const early = runs.filter((r) => r.now < startedAt + 60_000);
    expect(early.length, `${key}: runs started in the first minute`).toBeLessThanOrEqual(PER_MINUTE);
  }
}

/** An attempt's interval on one instance, from its start to its end. */
interface Interval {
  readonly i: string;
  readonly run: string;
  readonly from: number;
  readonly to: number;
}

/**
 * No two instances run a key at once: each attempt's interval, from its start to its end (or to its
 * process's exit, for one it was in when killed). An attempt that spans a freeze counts until the freeze:
 * what its handler does after the thaw is a stalled process finishing the call it was in, which nothing
 * outside the process can stop (its partition's new owner may be running the key's next window by then);
 * that the thawed process starts nothing of a shard it lost is checked by `checkFrozen`.
 */
function checkOverlaps(instances: readonly Instance[], frozen: readonly Frozen[]): void {
  const intervals = new Map<string, Interval[]>();
  for (const instance of instances)
    for (const [key, list] of attemptsOf(instance, frozen))
      intervals.set(key, [...(intervals.get(key) ?? []), ...list]);
  for (const [key, list] of intervals)
    for (const a of list)
      for (const b of list)
        if (a.i < b.i && a.from < b.to && b.from < a.to)
          expect.fail(`${key}: ${a.i} ran ${a.run} and ${b.i} ran ${b.run} at once (${JSON.stringify({ a, b })})`);
}

/** An instance's attempts, by key. */
function attemptsOf(instance: Instance, frozen: readonly Frozen[]): Map<string, Interval[]> {
  const intervals = new Map<string, Interval[]>();
  const open = new Map<string, RunLine>();
  const add = (l: RunLine, to: number): void => {
    const list = intervals.get(l.key) ?? [];
    intervals.set(l.key, list);
    const freeze = frozen.find((f) => f.id === instance.id && l.t < f.stoppedAt && to > f.stoppedAt);
    list.push({ i: instance.id, run: l.run, from: l.t, to: freeze === undefined ? to : freeze.stoppedAt });
  };
  for (const l of instance.lines) {
    if (l.run === undefined) continue;
    const line = l as RunLine;
    const attempt = `${line.run}/${line.attempt}`;
    if (line.ev === 'start') open.set(attempt, line);
    else {
      add(open.get(attempt)!, line.t);
      open.delete(attempt);
    }
  }
  for (const l of open.values()) add(l, instance.exitedAt!);
  return intervals;
}

/**
 * A frozen instance, thawed, starts no run of a partition until it owns that partition's shard again: the
 * instance that took the shard meanwhile runs its windows.
 */
function checkFrozen(o: Observed): void {
  for (const f of o.frozen) {
    const instance = o.instances.find((i) => i.id === f.id)!;
    const ownedAgain = new Set<number>();
    for (const l of instance.lines) {
      if (l.t === undefined || l.t < f.continuedAt) continue;
      if (l.ev === 'own') ownedAgain.add(l.shard!);
      if (l.ev === 'release') ownedAgain.delete(l.shard!);
      if (l.ev !== 'start') continue;
      const shard = o.partitionOf(l.key!);
      expect(ownedAgain.has(shard), `${f.id}, thawed, ran ${l.run} of shard ${shard} before owning it again`).toBe(
        true,
      );
    }
  }
}

/** What the test was told of one event sent with `app.send`: every receipt, from whichever instance. */
export interface SentEvent {
  readonly key: string;
  readonly seq: number;
  readonly receipts: SentReceipt[];
}

/**
 * Every receipt of an event names the run that carried it (one window, one run ID, whichever instance
 * answered), and at most one of them is not a duplicate.
 */
export function checkReceipts(sent: readonly SentEvent[], runs: ReadonlyMap<string, RunLine>): void {
  const runOf = new Map<string, string>();
  for (const run of runs.values()) for (const seq of run.seqs) runOf.set(`${run.key}/${seq}`, run.run);
  for (const e of sent) {
    const ran = runOf.get(`${e.key}/${e.seq}`);
    for (const r of e.receipts) expect(r, `${e.key}/${e.seq}: its receipts`).toEqual({ ...r, kind: 'run', runId: ran });
    const firsts = e.receipts.filter((r) => r.kind === 'run' && !r.duplicate);
    expect(firsts.length, `${e.key}/${e.seq}: receipts not duplicates`).toBeLessThanOrEqual(1);
  }
}
