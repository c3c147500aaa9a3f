/**
 * The promises of pace (docs/pace.md), checked against what a simulated run recorded.
 * Each checker returns the violations it found, in words that say which promise broke and where.
 */

/** The rates of the simulated subscribers held to one: at most `max` runs of a key start in any `perMs`. */
export const RATES = { pm: { max: 2, perMs: 60_000 }, drp: { max: 2, perMs: 3_000 } } as const;

export interface History {
  /** Every `app.send` made (acknowledged or not). */
  readonly sends: { life: number; sub: string; key: string; n: number; eventId?: string }[];
  /** The receipts senders got back: their events are durable. */
  readonly acks: {
    life: number;
    sub: string;
    key: string;
    n: number;
    eventId?: string;
    runId: string;
    duplicate: boolean;
  }[];
  /** Starts answered `{ kind: 'dropped' }` (durably). */
  readonly drops: { life: number; sub: string; key: string; n: number; eventId?: string }[];
  /** Messages published to the broker-fed subscriber (the broker acknowledged each one). */
  readonly published: { key: string; n: number }[];
  /** Every handler invocation of a run. */
  readonly runs: {
    life: number;
    sub: string;
    runId: string;
    key: string;
    size: number;
    startedAt: number;
    events: number[];
    attempt: number;
    finished: boolean;
  }[];
  /** How each process life ended. */
  readonly lives: { n: number; end: 'running' | 'crash' | 'stop' }[];
  /**
   * Pauses and resumes asked, in the order asked, with the world's time then (`asked`), and for a pause the
   * time its promise resolved (`acked`: the pause is durable), if it did.
   */
  readonly pauses?: { sub: string; op: 'pause' | 'resume'; asked: number; acked?: number }[];
  readonly notes: string[];
}

/** How a seed ended: it ran to the end, or a bit flip was (or was not) detected by recovery. */
export type Outcome =
  | { kind: 'ran' }
  | { kind: 'flip-detected'; at: number }
  | { kind: 'flip-missed'; at: number; where: string }
  | { kind: 'corrupt'; at: number }
  | { kind: 'corrupt-at-start' }
  | { kind: 'threw'; error: string };

export function check(h: History, outcome: Outcome): string[] {
  const out: string[] = [];
  if (outcome.kind === 'flip-missed')
    out.push(`a flipped bit (${outcome.where}) was not detected: recovery opened the store`);
  if (outcome.kind === 'threw') out.push(`the engine threw: ${outcome.error.split('\n').slice(0, 4).join(' | ')}`);
  if (outcome.kind === 'corrupt' || outcome.kind === 'corrupt-at-start')
    out.push(`the store refused to open (STORE_CORRUPT) with no damage done to it`);
  out.push(
    ...sameRunSameInput(h),
    ...noEmptyRun(h),
    ...receiptsNeverChange(h),
    ...eventsInOneRun(h),
    ...finishedNeverAgain(h),
    ...ratesKept(h),
    ...droppedNeverRan(h),
    ...heldWhilePaused(h),
  );
  // Liveness is checked only when the seed ran to its quiet end.
  if (outcome.kind === 'ran') out.push(...everyWindowRan(h));
  return out;
}

const byRun = (h: History): Map<string, History['runs']> => {
  const m = new Map<string, History['runs']>();
  for (const r of h.runs) m.set(`${r.sub}/${r.runId}`, [...(m.get(`${r.sub}/${r.runId}`) ?? []), r]);
  return m;
};

/** A run ID always carries the same events: re-runs (retries, restarts) never see another window. */
export function sameRunSameInput(h: History): string[] {
  const out: string[] = [];
  for (const [id, runs] of byRun(h)) {
    const first = runs[0]!;
    for (const r of runs.slice(1)) {
      if (r.size !== first.size || r.events.join() !== first.events.join() || r.startedAt !== first.startedAt) {
        out.push(
          `run ${id} ran with [${first.events.join(',')}] (size ${first.size}) in life ${first.life} and with [${r.events.join(',')}] (size ${r.size}) in life ${r.life}`,
        );
        break;
      }
    }
    if (!first.runId.startsWith(`${first.key}@`) || first.runId.length <= first.key.length + 1)
      out.push(`run ${id} is not a run ID of its key ${first.key} (<key>@<uuid>)`);
  }
  return out;
}

export function noEmptyRun(h: History): string[] {
  return h.runs.filter((r) => r.size < 1 || r.events.length < 1).map((r) => `run ${r.sub}/${r.runId} ran empty`);
}

/** A receipt never changes: every receipt for one event ID names the same run; only the first is not a duplicate. */
export function receiptsNeverChange(h: History): string[] {
  const out: string[] = [];
  const first = new Map<string, History['acks'][number]>();
  for (const a of h.acks) {
    if (!('runId' in a) || a.runId.length <= a.key.length + 1 || !a.runId.startsWith(`${a.key}@`))
      out.push(`receipt of event ${a.n} names ${a.runId}, not a run ID of key ${a.key} (<key>@<uuid>)`);
    if (a.eventId === undefined) continue;
    const id = `${a.sub}/${a.eventId}`;
    const f = first.get(id);
    if (!f) {
      first.set(id, a);
      continue;
    }
    if (a.runId !== f.runId)
      out.push(
        `event ID ${id} was answered with run ${f.runId} (life ${f.life}) and later with run ${a.runId} (life ${a.life})`,
      );
    else if (!a.duplicate)
      out.push(`event ID ${id} was answered twice as not a duplicate (lives ${f.life} and ${a.life})`);
  }
  return out;
}

/**
 * Every event is in at most one run, and an acknowledged event is in the run its receipt named (batch
 * subscribers carry every event; a debounced run carries only its latest).
 */
export function eventsInOneRun(h: History): string[] {
  const out: string[] = [];
  const runOf = new Map<string, string>();
  for (const [id, runs] of byRun(h)) {
    const { sub, events } = runs[0]!;
    for (const n of new Set(events)) {
      const other = runOf.get(`${sub}/${n}`);
      if (other !== undefined && other !== id) out.push(`event ${n} of ${sub} ran in two runs: ${other} and ${id}`);
      runOf.set(`${sub}/${n}`, id);
    }
    if (new Set(events).size !== events.length) out.push(`run ${id} carries an event twice: [${events.join(',')}]`);
  }
  for (const a of h.acks) {
    if (a.sub !== 'bat' && a.sub !== 'pm') continue;
    const ran = runOf.get(`${a.sub}/${a.n}`);
    if (ran !== undefined && ran !== `${a.sub}/${a.runId}`)
      out.push(`event ${a.n} of ${a.sub} was acknowledged for run ${a.runId} but ran in ${ran}`);
  }
  return out;
}

/** A run that finished in a life that then stopped gracefully (its end journaled) never runs again. */
function finishedNeverAgain(h: History): string[] {
  const out: string[] = [];
  const stopped = new Set(h.lives.filter((l) => l.end === 'stop').map((l) => l.n));
  const done = new Map<string, number>();
  for (const r of h.runs) {
    const id = `${r.sub}/${r.runId}`;
    const endedIn = done.get(id);
    if (endedIn !== undefined && (r.life === endedIn || stopped.has(endedIn)))
      out.push(`run ${id} finished in life ${endedIn} and ran again in life ${r.life}`);
    if (r.finished && endedIn === undefined) done.set(id, r.life);
  }
  return out;
}

/** Liveness: once faults stop, every acknowledged window ran and every published message was in a run. */
export function everyWindowRan(h: History): string[] {
  const out: string[] = [];
  const ran = new Set(h.runs.map((r) => `${r.sub}/${r.runId}`));
  const finished = new Set(h.runs.filter((r) => r.finished).map((r) => `${r.sub}/${r.runId}`));
  for (const a of h.acks) {
    if (!ran.has(`${a.sub}/${a.runId}`))
      out.push(`run ${a.sub}/${a.runId} (event ${a.n}, acknowledged in life ${a.life}) never ran`);
  }
  const clicks = new Set(h.runs.filter((r) => r.sub === 'clk').flatMap((r) => r.events));
  for (const p of h.published) if (!clicks.has(p.n)) out.push(`published click ${p.n} (key ${p.key}) was in no run`);
  const unfinished = [...ran].filter(
    (id) => !finished.has(id) && !h.runs.some((r) => `${r.sub}/${r.runId}` === id && r.attempt >= 3),
  );
  for (const id of unfinished) out.push(`run ${id} never finished`);
  return out;
}

/** No more than a rate's `max` runs of a key start in any of its periods (distinct runs, by when they started). */
export function ratesKept(h: History): string[] {
  const out: string[] = [];
  for (const [sub, { max, perMs }] of Object.entries(RATES)) {
    const starts = new Map<string, Map<string, number>>();
    for (const r of h.runs)
      if (r.sub === sub) starts.set(r.key, (starts.get(r.key) ?? new Map<string, number>()).set(r.runId, r.startedAt));
    for (const [key, runs] of starts) {
      const times = [...runs.values()].sort((a, b) => a - b);
      for (let i = 0; i + max < times.length; i++) {
        if (times[i + max]! - times[i]! < perMs)
          out.push(
            `${sub}: ${max + 1} runs of key ${key} started within ${times[i + max]! - times[i]!} ms (at most ${max} in ${perMs} ms)`,
          );
      }
    }
  }
  return out;
}

/** A dropped start makes no run, and an event ID answered dropped is never answered with a run (nor the reverse). */
export function droppedNeverRan(h: History): string[] {
  const out: string[] = [];
  const ran = new Set(h.runs.flatMap((r) => r.events.map((n) => `${r.sub}/${n}`)));
  for (const d of h.drops)
    if (ran.has(`${d.sub}/${d.n}`)) out.push(`event ${d.n} of ${d.sub} was answered dropped (life ${d.life}) but ran`);
  const acked = new Set(h.acks.filter((a) => a.eventId !== undefined).map((a) => `${a.sub}/${a.eventId}`));
  for (const d of h.drops)
    if (d.eventId !== undefined && acked.has(`${d.sub}/${d.eventId}`))
      out.push(`event ID ${d.sub}/${d.eventId} was answered both dropped and with a run`);
  return out;
}

/**
 * How far a run's `startedAt` (its life's clock) may stand from the world's time: a life's clock starts up
 * to a second behind, and creeps a millisecond ahead now and then.
 */
const CLOCK_SLACK_MS = 1_500;

/**
 * No run of a paused subscriber starts between its pause's acknowledgement and the next resume asked: a run
 * whose `startedAt` falls well inside that span (by the clocks' slack) left its coordinator while paused.
 */
export function heldWhilePaused(h: History): string[] {
  const out: string[] = [];
  const pauses = h.pauses ?? [];
  pauses.forEach((p, i) => {
    if (p.op !== 'pause' || p.acked === undefined) return;
    const end = pauses.slice(i + 1).find((q) => q.sub === p.sub && q.op === 'resume')?.asked ?? Infinity;
    for (const r of h.runs)
      if (r.sub === p.sub && r.startedAt > p.acked + CLOCK_SLACK_MS && r.startedAt < end - CLOCK_SLACK_MS)
        out.push(
          `run ${r.sub}/${r.runId} started at ${r.startedAt}, while paused (acknowledged at ${p.acked}, resumed at ${end})`,
        );
  });
  return out;
}
