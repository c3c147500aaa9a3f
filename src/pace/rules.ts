/**
 * Pace coordinators as shard rules: one coordinator per (subscriber, key), whose state changes only by
 * `apply` on its records — `event` (a start), `timer` (its window's time came, a waiting start may go, or
 * remembered IDs aged out) and `done` (a run finished). States are plain JSON values; a transition returns
 * a new one, and changes in place only the remembered IDs (ids.ts), which only the key's latest state holds.
 *
 * A run goes through three stages, every one of them state, so that a crash loses none:
 *   1. gathered — `debounce` or `batch` collect events into the open window (the coordinator's stage is
 *      `gathering`); without either, each event is a run of its own at once;
 *   2. held to the rate — `perMinute` lets at most n runs of the key start in any minute (`history`), and
 *      the others are `waiting`, highest order first; `drop` answers an event over its rate `dropped`;
 *   3. started — the run leaves for the subscriber's dispatch and stays in `running` until its `done`.
 * Whatever record comes to a key first moves it on: a due window closes and a waiting run whose time came
 * starts before the record's own effect, whether or not the timer record came first.
 */
import { TIMER, type Effects, type Rules, type ShardRecord } from '../shard/rules.js';
import { decodeEvent, paceCodec } from './codec.js';
import { DEFAULT_DEDUP_MS, MAX_BATCH, type CompiledPace, type CompiledRate } from './config.js';
import {
  forget,
  forgetAt,
  lastOffset,
  rememberId,
  rememberOffset,
  rememberOffsetIn,
  remembersNothing,
  runOfId,
} from './ids.js';
import {
  CANCEL,
  DONE,
  EVENT,
  PAUSE,
  pauseKey,
  QUIET,
  RELEASE,
  RESUME,
  runOf,
  splitKey,
  subscriberOf,
  type OpenWindow,
  type PaceEvent,
  type PaceOutput,
  type PaceState,
  type PendingRun,
  type Quiet,
  type Receipt,
} from './state.js';

export {
  CANCEL,
  coordinatorKey,
  DONE,
  EVENT,
  PAUSE,
  pauseKey,
  RELEASE,
  RESUME,
  type PaceDrop,
  type PaceEvent,
  type PaceOutput,
  type PaceReceipt,
  type PaceReply,
  type PaceRun,
  type PaceState,
  type Receipt,
} from './state.js';

/**
 * For records of a subscriber no longer mounted: waiting runs start at once (no rate holds them), a window
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
  /** The subscriber is paused in the shard: no run starts. */
  readonly paused: boolean;
}

const min = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/**
 * True when an event applied to `s` at `at` opens a run — a window (none is open, or the open one is due
 * and closes first) or a run by itself: the one place that decides. The sender asks it to mint a run UUID
 * only for such an event (journaling one with every event cost a third of `app.send`'s throughput), and
 * `event` asks it again as the record is applied, at the record's own time, so both see the same answer.
 */
export function opensRun(s: PaceState | undefined, pace: CompiledPace, at: number): boolean {
  return pace.kind === 'each' || s === undefined || s.stage === 'quiet' || s.window.closesAt <= at;
}

/** The window, if one is open. */
const windowOf = (s: PaceState): OpenWindow | undefined => (s.stage === 'gathering' ? s.window : undefined);

/**
 * When the coordinator needs its timer: its window's end; the next waiting run's time; when its rate's
 * history ages out; when its IDs age out — whichever comes first.
 */
function timerOf(s: PaceState, rate: CompiledRate | undefined): number | undefined {
  let t = min(windowOf(s)?.closesAt, forgetAt(s));
  const history = s.history;
  if (rate !== undefined && history.length > 0) {
    t = min(t, history[history.length - 1]! + rate.perMs);
    if (s.waiting.length > 0 && history.length >= rate.max)
      t = min(t, history[history.length - rate.max]! + rate.perMs);
  }
  return t;
}

/** Forgets run starts that no longer count against the rate at `at`. */
function prune(s: PaceState, rate: CompiledRate | undefined, at: number): PaceState {
  const history = s.history;
  const perMs = rate?.perMs ?? 0;
  let i = 0;
  while (i < history.length && history[i]! + perMs <= at) i++;
  if (i === 0) return s;
  return { ...s, history: history.slice(i) };
}

/** True when the rate lets one more run of the key start now (`prune` ran at this time). */
const allowed = (s: PaceState, rate: CompiledRate | undefined): boolean =>
  rate === undefined || s.history.length < rate.max;

/** A run starts: out to dispatch (once durable), into `running` until done, into the rate's history. */
function begin(s: PaceState, pending: PendingRun, c: Ctx): PaceState {
  const run = { ...pending, startedAt: c.at };
  c.fx.output(runOf(c.subscriber, c.key, run));
  const rate = c.pace.rate;
  // Stryker disable next-line MethodExpression: a run begins only while fewer than `max` starts are kept, so the cut never cuts
  const history = rate === undefined ? s.history : [...s.history, c.at].slice(-rate.max);
  return { ...s, running: [...s.running, run], history };
}

/** A run ready to start joins the waiting ones, after those of its order or higher. */
function enqueue(s: PaceState, run: PendingRun): PaceState {
  const waiting = s.waiting;
  let i = waiting.length;
  while (i > 0 && waiting[i - 1]!.order < run.order) i--;
  return { ...s, waiting: [...waiting.slice(0, i), run, ...waiting.slice(i)] };
}

/**
 * Starts the waiting runs (`max` of them at most), highest order first, while the rate lets them and no
 * pause holds them.
 */
function release(s: PaceState, c: Ctx, max = Number.POSITIVE_INFINITY): PaceState {
  for (let n = 0; n < max && s.waiting.length > 0 && !c.paused && allowed(s, c.pace.rate); n++) {
    const [head, ...rest] = s.waiting;
    s = begin({ ...s, waiting: rest }, head!, c);
  }
  return s;
}

/** A run is ready to start: it starts now if nothing waits before it and the rate allows, or else waits. */
function admit(s: PaceState, run: PendingRun, c: Ctx): PaceState {
  return release(enqueue(s, run), c);
}

/** The coordinator without its window. */
function quiet(s: PaceState): Quiet {
  if (s.stage === 'quiet') return s;
  const { window: _window, ...held } = s;
  return { ...held, stage: 'quiet' };
}

/** The open window closes: its run is ready to start. */
function close(s: PaceState, c: Ctx): PaceState {
  const { openedAt: _opened, closesAt: _closes, ...run } = windowOf(s)!;
  return admit(quiet(s), run, c);
}

function done(s: PaceState, runId: string): PaceState {
  return { ...s, running: s.running.filter((r) => r.runId !== runId) };
}

/**
 * What `app.cancel` answers: where the run was (its window open, or waiting), or null when it was neither (it
 * started already, or is unknown).
 *
 * @category Inspect
 */
export type Cancelled = 'window' | 'waiting' | null;

/** Cancels the run `runId` if its window is open or it waits; it never starts. */
function cancel(s: PaceState, runId: string, c: Ctx): PaceState {
  if (s.stage === 'gathering' && s.window.runId === runId) {
    c.fx.reply('window' satisfies Cancelled);
    return quiet(s);
  }
  const waiting = s.waiting.filter((r) => r.runId !== runId);
  c.fx.reply((waiting.length < s.waiting.length ? 'waiting' : null) satisfies Cancelled);
  return waiting.length < s.waiting.length ? { ...s, waiting } : s;
}

/** A pause coordinator paused (`PAUSE`) or not (`RESUME`); answered whether that changed it. */
function pause(s: PaceState, paused: boolean, c: Ctx): PaceState {
  c.fx.reply((s.paused === true) !== paused);
  if (paused) return { ...s, paused: true };
  const { paused: _paused, ...rest } = s;
  return rest;
}

/**
 * What a shard's core sums over its keys for metrics (`ShardCore.tallies`), in this order: open windows, and
 * starts waiting for their rate.
 */
export const PACE_TALLIES: readonly ((s: PaceState) => number)[] = [
  (s) => (s.stage === 'gathering' ? 1 : 0),
  (s) => s.waiting.length,
];

/**
 * The marks a shard's core keeps the keys of (see `Rules.marks`), by index: keys with an open window, with
 * runs waiting, with runs started and not done; pause coordinators that hold their subscriber paused.
 */
export const MARK = Object.freeze({ window: 0, waiting: 1, running: 2, paused: 3 });
export const PACE_MARKS: readonly ((s: PaceState) => boolean)[] = [
  (s) => s.stage === 'gathering',
  (s) => s.waiting.length > 0,
  (s) => s.running.length > 0,
  (s) => s.paused === true,
];

/** The rules of every paced subscriber of an app, by subscriber name. */
export function paceRules(paces: ReadonlyMap<string, CompiledPace>): Rules<PaceState, PaceOutput> {
  let last = '';
  const pauseKeys = new Map<string, string>();
  const pauseKeyOf = (subscriber: string): string => {
    let key = pauseKeys.get(subscriber);
    if (key === undefined) pauseKeys.set(subscriber, (key = pauseKey(subscriber)));
    return key;
  };
  return {
    initial: () => QUIET,
    retired: (s) =>
      s.paused !== true &&
      s.stage === 'quiet' &&
      s.waiting.length === 0 &&
      s.running.length === 0 &&
      s.history.length === 0 &&
      remembersNothing(s),
    // A snapshot carries the open window, the waiting runs, the runs not done, the rate's history and the
    // remembered IDs: all of the state, so there is no `rebase`.
    codec: paceCodec,
    tallies: PACE_TALLIES,
    marks: PACE_MARKS,
    // Pace's tallies are read per subscriber. The last one found is tried first: no string is made for a key of
    // the same subscriber as the key before (most shards serve one).
    tallyGroup: (key) =>
      key.charCodeAt(last.length) === 0 && key.startsWith(last) ? last : (last = subscriberOf(key)),
    apply(state: PaceState, record: ShardRecord, fx: Effects<PaceOutput>): PaceState {
      const [subscriber, key] = splitKey(record.key);
      const pace = paces.get(subscriber) ?? ORPHAN;
      const paused = fx.marked(MARK.paused, pauseKeyOf(subscriber));
      const c: Ctx = { subscriber, key, at: record.at, pace, fx, paused };
      const type = record.type;
      const before = type === TIMER ? undefined : timerOf(state, pace.rate);
      const e = type === EVENT ? decodeEvent(record.data) : undefined;
      let s = prune(forget(state, c.at), pace.rate, c.at);
      // A window whose time has come closes before anything else happens to the key, whether or not its
      // timer record came first: an event exactly at the window's end (its own time) opens the next window.
      if (s.stage === 'gathering' && (e?.time ?? c.at) >= s.window.closesAt) s = close(s, c);
      // A `release` starts as many waiting runs as it says (a resume's wake, run by run in their order), or all
      // of them when it says no number: a record without data reads back from the journal with `null`.
      const max = type === RELEASE && typeof record.data === 'number' ? record.data : Number.POSITIVE_INFINITY;
      s = release(s, c, max);
      if (e !== undefined) s = event(s, e, c);
      else if (type === DONE) s = done(s, record.data as string);
      else if (type === CANCEL) s = cancel(s, record.data as string, c);
      else if (type === PAUSE || type === RESUME) s = pause(s, type === PAUSE, c);
      const after = timerOf(s, pace.rate);
      if (after !== before) fx.timer(after);
      return s;
    },
  };
}

/** True when the event was seen before: its ID is remembered, or its broker offset is not past the last seen. */
function seenBefore(s: PaceState, e: PaceEvent): boolean {
  if (e.eventId !== undefined) return runOfId(s, e.eventId) !== undefined;
  if (e.source !== undefined) {
    const last = lastOffset(s, e.source.partition);
    return last !== undefined && e.source.offset <= last;
  }
  return false;
}

/** Remembers the event's ID as having joined `runId` (`''`: dropped), or its broker offset, until `dedup` after it. */
function remember(s: PaceState, e: PaceEvent, runId: string, c: Ctx): PaceState {
  if (e.eventId !== undefined) return rememberId(s, e.eventId, runId, c.at + c.pace.dedupMs);
  if (e.source !== undefined) return rememberOffset(s, e.source.partition, e.source.offset, c.at + c.pace.dedupMs);
  return s;
}

/** {@link remember} into `s`, a copy made for this record (no other copy is made). */
function rememberIn(s: PaceState, e: PaceEvent, runId: string, c: Ctx): PaceState {
  if (e.eventId !== undefined) return rememberId(s, e.eventId, runId, c.at + c.pace.dedupMs);
  if (e.source !== undefined) rememberOffsetIn(s, e.source.partition, e.source.offset, c.at + c.pace.dedupMs);
  return s;
}

/** The run a redelivered broker message (no ID of its own) most likely joined. */
const latestRunId = (s: PaceState): string =>
  windowOf(s)?.runId ?? s.waiting.at(-1)?.runId ?? s.running.at(-1)?.runId ?? '';

function reply(c: Ctx, r: Receipt): void {
  c.fx.reply(r);
}

function event(s: PaceState, e: PaceEvent, c: Ctx): PaceState {
  if (seenBefore(s, e)) {
    const runId = e.eventId !== undefined ? runOfId(s, e.eventId)! : latestRunId(s);
    reply(
      c,
      runId === '' && e.eventId !== undefined
        ? { kind: 'dropped', dropped: true }
        : { kind: 'run', runId, duplicate: true },
    );
    return s;
  }
  const { pace, key } = c;
  const at = e.time ?? c.at; // where the event falls among windows
  const opens = opensRun(s, pace, at);
  const w = opens ? undefined : windowOf(s);
  // `drop`: an event that would make a run (it opens a window, or is a run by itself) over the rate is dropped.
  if (pace.rate?.drop === true && opens && !allowed(s, pace.rate)) {
    c.fx.output({
      subscriber: c.subscriber,
      key,
      dropped: true,
      at: c.at,
      ...(e.eventId !== undefined ? { eventId: e.eventId } : {}),
    });
    reply(c, { kind: 'dropped', dropped: true });
    return remember(s, e, '', c);
  }
  // The run ID of a run this event opens: the UUID its sender minted for it (see `opensRun`). Made only then.
  const runId = opens ? `${key}@${e.runUuid}` : '';
  if (pace.kind === 'each') {
    const run: PendingRun = { runId, events: [e.event], size: 1, order: e.order };
    reply(c, { kind: 'run', runId, duplicate: false });
    return admit(remember(s, e, runId, c), run, c);
  }
  let next: OpenWindow;
  if (pace.kind === 'debounce') {
    // The run gets the latest event, and its order.
    const openedAt = w?.openedAt ?? at;
    const cap = pace.maxWaitMs === undefined ? Number.POSITIVE_INFINITY : openedAt + pace.maxWaitMs;
    next = {
      runId: w?.runId ?? runId,
      openedAt,
      // Never earlier than it was: a delivery may come with a broker time older than the one before.
      closesAt: Math.min(Math.max(at + pace.windowMs, w?.closesAt ?? 0), cap),
      events: [e.event],
      size: (w?.size ?? 0) + 1,
      order: e.order,
    };
  } else if (w === undefined) {
    next = { runId, openedAt: at, closesAt: at + pace.waitMs, events: [e.event], size: 1, order: e.order };
  } else {
    // A batch goes as early as its most urgent event (one without an order counts as order 0).
    next = { ...w, events: [...w.events, e.event], size: w.size + 1, order: Math.max(e.order, w.order) };
  }
  // One copy of the state: what is remembered of the event goes into it in place.
  s = rememberIn({ ...s, stage: 'gathering', window: next }, e, next.runId, c);
  reply(c, { kind: 'run', runId: next.runId, duplicate: false });
  if (pace.kind === 'batch' && next.size >= pace.max) s = close(s, c);
  return s;
}
