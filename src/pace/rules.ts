/**
 * Pace coordinators as shard rules: one coordinator per (subscriber, key), whose state changes only by
 * `apply` on its records — `event` (a start), `timer` (its window's time came, a waiting start may go, or
 * remembered IDs aged out) and `done` (a run finished). States are plain JSON values; a transition returns
 * a new one, and changes in place only the remembered IDs (ids.ts), which only the key's latest state holds.
 *
 * A start goes through three stages, every one of them state, so that a crash loses none:
 *   1. gathered — `debounce` or `batch` collect starts into a window (`w`); without either, each start is
 *      one run's start at once;
 *   2. held to the rate — `perMinute` lets at most n runs of the key start in any minute, and the others
 *      wait in `q`, highest order first; `drop` answers a start over its rate `{ dropped: true }`;
 *   3. started — the run leaves for the subscriber's dispatch and stays in `runs` until its `done`.
 * Whatever record comes to a key first moves it on: a due window closes and a waiting start whose time
 * came starts before the record's own effect, whether or not the timer record came first.
 */
import { TIMER, type Effects, type Rules, type ShardRecord } from '../shard/rules.js';
import { forget, forgetAt, lastOffset, rememberId, rememberOffset, remembersNothing, runOfId } from './ids.js';
import { DEFAULT_DEDUP_MS, MAX_BATCH, type CompiledPace, type CompiledRate } from './config.js';
import {
  DONE,
  EVENT,
  runOf,
  splitKey,
  type EventData,
  type PaceOutput,
  type PaceReply,
  type PaceState,
  type Start,
  type Window,
} from './state.js';

export {
  coordinatorKey,
  DONE,
  EVENT,
  type EventData,
  type PaceDrop,
  type PaceOutput,
  type PaceReceipt,
  type PaceReply,
  type PaceRun,
  type PaceState,
} from './state.js';

/**
 * For records of a subscriber no longer mounted: waiting starts start at once (no rate holds them), a window
 * still open closes when it was due and a new one on its next record (it waits no time), new IDs are kept the
 * default time.
 */
const ORPHAN: CompiledPace = { kind: 'batch', max: MAX_BATCH, waitMs: 0, dedupMs: DEFAULT_DEDUP_MS };

/** What one transition works with besides the state. */
interface Ctx {
  readonly subscriber: string;
  readonly key: string;
  readonly at: number;
  readonly pace: CompiledPace;
  readonly fx: Effects<PaceOutput>;
}

/**
 * True when a start appended to `state` at `now` needs a run ID of its own (it opens a window, or is a run by itself).
 */
export function needsRunId(state: PaceState | undefined, pace: CompiledPace, now: number): boolean {
  if (pace.kind === 'each') return true;
  const w = state?.w;
  return !(w !== undefined && w.due > now);
}

const min = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/**
 * When the coordinator needs its timer: its window's end; the next waiting start's time; when its start
 * history ages out; when its IDs age out — whichever comes first.
 */
function timerOf(s: PaceState, rate: CompiledRate | undefined): number | undefined {
  let t = min(s.w?.due, forgetAt(s));
  const starts = s.starts;
  if (rate !== undefined && starts !== undefined) {
    t = min(t, starts[starts.length - 1]! + rate.perMs);
    if (s.q !== undefined && starts.length >= rate.max) t = min(t, starts[starts.length - rate.max]! + rate.perMs);
  }
  return t;
}

/** Forgets run starts that no longer count against the rate at `at`. */
function prune(s: PaceState, rate: CompiledRate | undefined, at: number): PaceState {
  const starts = s.starts;
  if (starts === undefined) return s;
  const perMs = rate?.perMs ?? 0;
  let i = 0;
  while (i < starts.length && starts[i]! + perMs <= at) i++;
  if (i === 0) return s;
  return { ...s, starts: i === starts.length ? undefined : starts.slice(i) };
}

/** True when the rate lets one more run of the key start now (`prune` ran at this time). */
const allowed = (s: PaceState, rate: CompiledRate | undefined): boolean =>
  rate === undefined || (s.starts?.length ?? 0) < rate.max;

/** A run starts: out to dispatch (once durable), into `runs` until done, into the rate's history. */
function begin(s: PaceState, start: Start, c: Ctx): PaceState {
  const run = { ...start, at: c.at };
  c.fx.output(runOf(c.subscriber, c.key, run));
  const rate = c.pace.rate;
  // Stryker disable next-line MethodExpression: a run begins only while fewer than `max` starts are kept, so the cut never cuts
  const starts = rate === undefined ? s.starts : [...(s.starts ?? []), c.at].slice(-rate.max);
  return { ...s, runs: [...(s.runs ?? []), run], starts };
}

/** A start ready to run joins the waiting ones, after those of its order or higher. */
function enqueue(s: PaceState, start: Start): PaceState {
  const q = s.q ?? [];
  const o = start.o ?? 0;
  let i = q.length;
  while (i > 0 && (q[i - 1]!.o ?? 0) < o) i--;
  return { ...s, q: [...q.slice(0, i), start, ...q.slice(i)] };
}

/** Starts the waiting starts, highest order first, as long as the rate lets them. */
function release(s: PaceState, c: Ctx): PaceState {
  while (s.q !== undefined && allowed(s, c.pace.rate)) {
    const [head, ...rest] = s.q;
    s = begin({ ...s, q: rest.length > 0 ? rest : undefined }, head!, c);
  }
  return s;
}

/** A start is ready to run: it starts now if nothing waits before it and the rate allows, or else waits. */
function admit(s: PaceState, start: Start, c: Ctx): PaceState {
  return release(enqueue(s, start), c);
}

/** The open window closes: it is a start ready to run (its order kept, or left out as in the window). */
function close(s: PaceState, c: Ctx): PaceState {
  const { first: _first, due: _due, ...start } = s.w!;
  return admit({ ...s, w: undefined }, start, c);
}

function done(s: PaceState, runId: string): PaceState {
  const runs = (s.runs ?? []).filter((r) => r.id !== runId);
  return { ...s, runs: runs.length > 0 ? runs : undefined };
}

/** The rules of every paced subscriber of an app, by subscriber name. */
export function paceRules(paces: ReadonlyMap<string, CompiledPace>): Rules<PaceState, PaceOutput> {
  return {
    initial: () => ({}),
    retired: (s) =>
      s.w === undefined && s.q === undefined && s.runs === undefined && s.starts === undefined && remembersNothing(s),
    // A snapshot carries the open window, the waiting starts, the runs not done, the rate's history and the
    // remembered IDs: all of the state, so there is no `rebase`.
    apply(state: PaceState, record: ShardRecord, fx: Effects<PaceOutput>): PaceState {
      const [subscriber, key] = splitKey(record.key);
      const pace = paces.get(subscriber) ?? ORPHAN;
      const c: Ctx = { subscriber, key, at: record.at, pace, fx };
      const before = record.type === TIMER ? undefined : timerOf(state, pace.rate);
      let s = prune(forget(state, c.at), pace.rate, c.at);
      // A window whose time has come closes before anything else happens to the key, whether or not its
      // timer record came first: an event exactly at the window's end opens the next window.
      if (s.w !== undefined && c.at >= s.w.due) s = close(s, c);
      s = release(s, c);
      if (record.type === EVENT) s = event(s, record.data as EventData, c);
      else if (record.type === DONE) s = done(s, record.data as string);
      const after = timerOf(s, pace.rate);
      if (after !== before) fx.timer(after);
      return s;
    },
  };
}

/** True when the event was seen before: its ID is remembered, or its broker offset is not past the last seen. */
function seenBefore(s: PaceState, data: EventData): boolean {
  if (data.id !== undefined) return runOfId(s, data.id) !== undefined;
  if (data.src !== undefined) {
    const last = lastOffset(s, data.src);
    return last !== undefined && data.off! <= last;
  }
  return false;
}

/** Remembers the event's ID as having joined `runId` (`''`: dropped), or its broker offset, until `dedup` after it. */
function remember(s: PaceState, data: EventData, runId: string, c: Ctx): PaceState {
  if (data.id !== undefined) return rememberId(s, data.id, runId, c.at + c.pace.dedupMs);
  if (data.src !== undefined) return rememberOffset(s, data.src, data.off!, c.at + c.pace.dedupMs);
  return s;
}

/** The run a redelivered broker message (no ID of its own) most likely joined. */
const latestId = (s: PaceState): string => s.w?.id ?? s.q?.at(-1)?.id ?? s.runs?.at(-1)?.id ?? '';

function reply(c: Ctx, r: PaceReply): void {
  c.fx.reply(r);
}

function event(s: PaceState, data: EventData, c: Ctx): PaceState {
  if (seenBefore(s, data)) {
    const runId = data.id !== undefined ? runOfId(s, data.id)! : latestId(s);
    reply(c, runId === '' && data.id !== undefined ? { dropped: true } : { runId, duplicate: true });
    return s;
  }
  const { pace, key, at } = c;
  const w = s.w;
  // `drop`: a start that would make a run (it opens a window, or is a run by itself) over the rate is dropped.
  if (pace.rate?.drop === true && (pace.kind === 'each' || w === undefined) && !allowed(s, pace.rate)) {
    c.fx.output({
      subscriber: c.subscriber,
      key,
      dropped: true,
      at,
      ...(data.id !== undefined ? { eventId: data.id } : {}),
    });
    reply(c, { dropped: true });
    return remember(s, data, '', c);
  }
  const o = data.o || undefined; // an order of 0 is left out, as no order is
  if (pace.kind === 'each') {
    const start: Start = { id: `${key}@${data.r}`, events: [data.e], size: 1, ...(o !== undefined ? { o } : {}) };
    reply(c, { runId: start.id, duplicate: false });
    return admit(remember(s, data, start.id, c), start, c);
  }
  let next: Window;
  if (pace.kind === 'debounce') {
    // The run gets the latest start's event, and its order.
    const first = w?.first ?? at;
    const cap = pace.maxWaitMs === undefined ? Number.POSITIVE_INFINITY : first + pace.maxWaitMs;
    next = {
      id: w?.id ?? `${key}@${data.r}`,
      first,
      due: Math.min(at + pace.windowMs, cap),
      events: [data.e],
      size: (w?.size ?? 0) + 1,
      ...(o !== undefined ? { o } : {}),
    };
  } else {
    // A batch goes as early as its most urgent start (a start without an order counts as order 0).
    const top = w === undefined ? o : Math.max(o ?? 0, w.o ?? 0);
    const base =
      w === undefined
        ? { id: `${key}@${data.r}`, first: at, due: at + pace.waitMs, events: [data.e], size: 1 }
        : { ...w, events: [...w.events, data.e], size: w.size + 1 };
    const { o: _old, ...rest } = base as Window;
    next = top ? { ...rest, o: top } : rest; // an order of 0, or none, is left out
  }
  s = remember({ ...s, w: next }, data, next.id, c);
  reply(c, { runId: next.id, duplicate: false });
  if (pace.kind === 'batch' && next.size >= pace.max) s = close(s, c);
  return s;
}
