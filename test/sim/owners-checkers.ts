/**
 * The promises of pace with shards owned by partition, checked against what the partitioned world
 * (owners-world.ts) recorded: those of checkers.ts that hold across instances as they hold across lives
 * (a run ID carries one window, receipts never change, an event is in one run, rates, drops), and those of
 * a hand-over — a key's runs never overlap on two instances, a run that finished is not run again after a
 * graceful hand-over, a debounced run carries its window's latest event, and nothing acknowledged is lost.
 * A "life" of History is an instance here.
 */
import {
  droppedNeverRan,
  eventsInOneRun,
  noEmptyRun,
  ratesKept,
  receiptsNeverChange,
  sameRunSameInput,
  type History,
  type Outcome,
} from './checkers.js';

/** A handler invocation, with the world's moments (ticks) it started and settled (or its process died) at. */
export interface OwnersRun extends Readonly<Omit<History['runs'][number], 'finished'>> {
  finished: boolean;
  readonly from: number;
  to?: number;
}

export interface OwnersHistory extends History {
  /** The app's one paced subscriber. */
  readonly sub: string;
  readonly sends: (History['sends'][number] & { readonly at: number })[];
  /** Receipts, with the moment their send was made and the moment they came back. */
  readonly acks: (History['acks'][number] & { readonly sentAt: number; readonly at: number })[];
  /** Messages published to the paced subscriber's topic: acknowledged once the group committed past them. */
  readonly published: { key: string; n: number; partition: number; offset: number }[];
  readonly runs: OwnersRun[];
  /** The last moment taken. */
  ticks: number;
  /**
   * Per instance: when it was cut off from the group (a crash, or turned zombie), and when it warned that
   * it let go of work still running (a revoke or stop past its deadline, a handler timed out).
   */
  readonly instances: { n: number; cutAt?: number; late: number[] }[];
  /** What must not happen at all: an instance that failed to start or to stop. */
  readonly errors: string[];
  /** At the end, after every member stopped: the group's committed offsets and the topic's end offsets. */
  readonly committed: number[];
  readonly endOffsets: number[];
}

export function checkOwners(h: OwnersHistory, outcome: Outcome): string[] {
  const out: string[] = [];
  if (outcome.kind === 'threw') out.push(`the engine threw: ${outcome.error.split('\n').slice(0, 4).join(' | ')}`);
  out.push(
    ...h.errors.map((e) => e.split('\n').slice(0, 3).join(' | ')),
    ...sameRunSameInput(h),
    ...noEmptyRun(h),
    ...receiptsNeverChange(h),
    ...eventsInOneRun(h),
    ...ratesKept(h),
    ...droppedNeverRan(h),
    ...noOverlapAcrossInstances(h),
    ...finishedNotRunAgain(h),
    ...debouncedCarriesLatest(h),
  );
  if (outcome.kind === 'ran') out.push(...ownersLiveness(h), ...everythingCommitted(h));
  return out;
}

/** Whether instance `n` was cut off by moment `at` (a crash, a zombie). */
function cut(h: OwnersHistory, n: number, at: number): boolean {
  const c = h.instances[n - 1]!.cutAt;
  return c !== undefined && c <= at;
}

/**
 * Whether run `b`, begun while `a` (of another instance, or earlier) ran or after it finished, is excused:
 * either instance was cut off by then (a zombie runs what it still holds), or `a`'s instance warned that it
 * let work go (a revoke or a stop past its deadline, a handler timed out) between `a`'s start and `b`'s.
 */
function excused(h: OwnersHistory, a: OwnersRun, b: OwnersRun): boolean {
  return (
    cut(h, a.life, b.from) ||
    cut(h, b.life, b.from) ||
    h.instances[a.life - 1]!.late.some((t) => t >= a.from && t <= b.from)
  );
}

/**
 * A key's runs never overlap in time on two instances: a shard is handed over only once the runs it let
 * out are done. Excused: an instance cut off (a crash, a zombie) or one that warned it let a run go.
 */
function noOverlapAcrossInstances(h: OwnersHistory): string[] {
  const out: string[] = [];
  const byKey = new Map<string, OwnersRun[]>();
  for (const r of h.runs) byKey.set(`${r.sub}/${r.key}`, [...(byKey.get(`${r.sub}/${r.key}`) ?? []), r]);
  for (const [key, runs] of byKey) {
    const sorted = [...runs].sort((a, b) => a.from - b.from);
    for (let i = 0; i < sorted.length; i++) {
      const a = sorted[i]!;
      const end = a.to ?? Number.POSITIVE_INFINITY;
      for (let j = i + 1; j < sorted.length && sorted[j]!.from < end; j++) {
        const b = sorted[j]!;
        if (b.life === a.life || excused(h, a, b)) continue;
        out.push(
          `key ${key}: run ${a.runId} (instance ${a.life}, moments ${a.from}–${a.to ?? 'never settled'}) overlaps run ${b.runId} (instance ${b.life}, from ${b.from})`,
        );
        break;
      }
    }
  }
  return out;
}

/**
 * A run that finished on an instance is not run again: its end is journaled before its shard is handed
 * over. Excused: that instance was cut off, or warned it let work go, before the run ran again.
 */
function finishedNotRunAgain(h: OwnersHistory): string[] {
  const out: string[] = [];
  const byRun = new Map<string, OwnersRun[]>();
  for (const r of h.runs) byRun.set(`${r.sub}/${r.runId}`, [...(byRun.get(`${r.sub}/${r.runId}`) ?? []), r]);
  for (const [id, runs] of byRun) {
    const f = runs.filter((r) => r.finished).sort((a, b) => a.to! - b.to!)[0];
    if (f === undefined) continue;
    const again = runs.find((r) => r.from > f.to! && !excused(h, f, r));
    if (again)
      out.push(
        `run ${id} finished on instance ${f.life} (moment ${f.to}) and ran again on instance ${again.life} (moment ${again.from})`,
      );
  }
  return out;
}

/**
 * A debounced run carries its window's latest event: never one that was acknowledged before a later event
 * of its window (the receipt naming the run) was even sent.
 */
function debouncedCarriesLatest(h: OwnersHistory): string[] {
  const out: string[] = [];
  const carried = new Map<string, number[]>();
  for (const r of h.runs) if (r.sub === 'deb') carried.set(r.runId, r.events);
  const ackedAt = new Map<number, number>();
  for (const a of h.acks) if (a.sub === 'deb' && !ackedAt.has(a.n)) ackedAt.set(a.n, a.at);
  for (const a of h.acks) {
    if (a.sub !== 'deb' || a.duplicate) continue;
    for (const n of carried.get(a.runId) ?? []) {
      const at = ackedAt.get(n);
      if (n !== a.n && at !== undefined && at < a.sentAt)
        out.push(
          `debounced run ${a.runId} carries event ${n}, acknowledged (moment ${at}) before event ${a.n} of its window was sent (moment ${a.sentAt})`,
        );
    }
  }
  return out;
}

/**
 * Liveness, once faults stop: every receipt's run ran and finished, and (batches keep every event) every
 * message published to the topic was in a run.
 */
export function ownersLiveness(h: OwnersHistory): string[] {
  const out: string[] = [];
  const ran = new Set(h.runs.map((r) => `${r.sub}/${r.runId}`));
  const finished = new Set(h.runs.filter((r) => r.finished).map((r) => `${r.sub}/${r.runId}`));
  for (const a of h.acks)
    if (!ran.has(`${a.sub}/${a.runId}`))
      out.push(`run ${a.sub}/${a.runId} (event ${a.n}, acknowledged on instance ${a.life}) never ran`);
  if (h.sub === 'bat' || h.sub === 'pm') {
    const inRun = new Set(h.runs.flatMap((r) => r.events));
    for (const p of h.published)
      if (!inRun.has(p.n)) out.push(`published event ${p.n} (key ${p.key}, ${p.partition}/${p.offset}) was in no run`);
  }
  for (const id of ran)
    if (!finished.has(id) && !h.runs.some((r) => `${r.sub}/${r.runId}` === id && r.attempt >= 3))
      out.push(`run ${id} never finished`);
  return out;
}

/** Once every member stopped, the group had committed every message of the topic. */
function everythingCommitted(h: OwnersHistory): string[] {
  return h.endOffsets.flatMap((end, p) =>
    (h.committed[p] ?? 0) < end ? [`partition ${p}: the group committed ${h.committed[p]} of ${end} messages`] : [],
  );
}
