/**
 * Debounce and batch coordinators as shard rules: one coordinator per (subscriber, key), whose state
 * changes only by `apply` on its records — `event` (a start), `timer` (its window's time came, or its
 * remembered IDs aged out) and `done` (a run finished). States are plain JSON values, never mutated: a
 * transition returns a new one, so a snapshot being written sees each key as it was.
 */
import { sabotage } from '../core/sabotage.js';
import { TIMER, type Effects, type Rules, type ShardRecord } from '../shard/rules.js';
import { DEFAULT_DEDUP_MS, MAX_BATCH, type CompiledPace } from './config.js';

/** Record types of a pace coordinator (besides the core's `timer`). */
export const EVENT = 'event';
export const DONE = 'done';

/**
 * An `event` record's data: the event; its ID if the sender gave one, or for a broker delivery its source
 * (`topic/partition`) and offset; and the run ID's UUID should it open a window.
 */
export interface EventData {
  readonly e: unknown;
  readonly id?: string;
  readonly src?: string;
  readonly off?: number;
  readonly r: string;
}

/** A window or a run: its ID, its events (debounce: the latest), and how many starts it took. */
interface Window {
  readonly id: string;
  /** When the first start arrived. */
  readonly first: number;
  /** When the window closes (the run starts). */
  readonly due: number;
  readonly events: readonly unknown[];
  readonly size: number;
}

/** A coordinator's state. */
export interface PaceState {
  /** The open window. */
  readonly w?: Window;
  /** Runs that started and have not finished: handed out again after a restart. */
  readonly runs?: readonly Omit<Window, 'first' | 'due'>[];
  /** Remembered event IDs, with the run each joined. */
  readonly ids?: Readonly<Record<string, string>>;
  /**
   * For broker deliveries, the highest offset seen per `topic/partition`: a partition delivers a key's
   * messages in offset order, so a redelivery is any offset not past it. One number per partition
   * instead of one ID per message.
   */
  readonly seen?: Readonly<Record<string, number>>;
  /** When the remembered IDs and offsets are forgotten (the last one's arrival plus `dedup`). */
  readonly idsUntil?: number;
}

/** A run leaving a coordinator, for the subscriber's dispatch. */
export interface PaceRun {
  readonly subscriber: string;
  readonly key: string;
  readonly id: string;
  readonly events: readonly unknown[];
  readonly size: number;
}

/** What `app.send` resolves with. */
export interface PaceReceipt {
  readonly runId: string;
  readonly duplicate: boolean;
}

const SEP = '\u0000';

/** A coordinator's key in the shard: the subscriber's name and the user's key. */
export const coordinatorKey = (subscriber: string, key: string): string => subscriber + SEP + key;

function splitKey(key: string): [string, string] {
  const at = key.indexOf(SEP);
  return at < 0 ? ['', key] : [key.slice(0, at), key.slice(at + 1)];
}

/** For records of a subscriber no longer mounted: open windows close at once, IDs are kept the default time. */
const ORPHAN: CompiledPace = { kind: 'batch', max: MAX_BATCH, waitMs: 0, dedupMs: DEFAULT_DEDUP_MS };

/** When the coordinator needs its timer: its window's end, or else when its IDs age out. */
function timerOf(s: PaceState): number | undefined {
  if (s.w === undefined) return s.idsUntil;
  return s.idsUntil === undefined ? s.w.due : Math.min(s.w.due, s.idsUntil);
}

function close(s: PaceState, subscriber: string, key: string, fx: Effects<PaceRun>): PaceState {
  const { id, events, size } = s.w!;
  fx.output({ subscriber, key, id, events, size });
  return { ...s, w: undefined, runs: [...(s.runs ?? []), { id, events, size }] };
}

/** Forgets the remembered IDs once their time is up. */
function forget(s: PaceState, at: number): PaceState {
  return s.idsUntil !== undefined && at >= s.idsUntil ? { ...s, ids: undefined, seen: undefined, idsUntil: undefined } : s;
}

function done(s: PaceState, runId: string): PaceState {
  const runs = (s.runs ?? []).filter((r) => r.id !== runId);
  return { ...s, runs: runs.length > 0 ? runs : undefined };
}

/** The rules of every paced subscriber of an app, by subscriber name. */
export function paceRules(paces: ReadonlyMap<string, CompiledPace>): Rules<PaceState, PaceRun> {
  return {
    initial: () => ({}),
    retired: (s) => s.w === undefined && s.runs === undefined && s.idsUntil === undefined,
    // A snapshot carries the open window, the runs not done and the remembered IDs: all of the state.
    rebase: (s) => (sabotage.forgetIds ? { ...s, ids: undefined, seen: undefined } : s),
    apply(state: PaceState, record: ShardRecord, fx: Effects<PaceRun>): PaceState {
      const [subscriber, key] = splitKey(record.key);
      const at = record.at;
      const before = record.type === TIMER ? undefined : timerOf(state);
      let s = forget(state, at);
      // A window whose time has come closes before anything else happens to the key, whether or not its
      // timer record came first: an event exactly at the window's end opens the next window.
      if (s.w !== undefined && at >= s.w.due) s = close(s, subscriber, key, fx);
      if (record.type === EVENT) s = event(s, record.data as EventData, subscriber, key, at, paces.get(subscriber) ?? ORPHAN, fx);
      else if (record.type === DONE) s = done(s, record.data as string);
      const after = timerOf(s);
      if (after !== before) fx.timer(after);
      return s;
    },
  };
}

/** True when the event was seen before: its ID is remembered, or its broker offset is not past the last seen. */
function seenBefore(s: PaceState, data: EventData): boolean {
  if (data.id !== undefined) return s.ids?.[data.id] !== undefined;
  if (data.src !== undefined) {
    const last = s.seen?.[data.src];
    return last !== undefined && data.off! <= last;
  }
  return false;
}

function event(s: PaceState, data: EventData, subscriber: string, key: string, at: number, pace: CompiledPace, fx: Effects<PaceRun>): PaceState {
  if (seenBefore(s, data)) {
    const runId = data.id !== undefined ? s.ids![data.id]! : (s.w?.id ?? s.runs?.at(-1)?.id ?? '');
    fx.reply({ runId, duplicate: true } satisfies PaceReceipt);
    return s;
  }
  const w = s.w;
  let next: Window;
  if (pace.kind === 'debounce') {
    const first = w?.first ?? at;
    const cap = pace.maxWaitMs === undefined ? Number.POSITIVE_INFINITY : first + pace.maxWaitMs;
    next = { id: w?.id ?? `${key}@${data.r}`, first, due: Math.min(at + pace.windowMs, cap), events: [data.e], size: (w?.size ?? 0) + 1 };
  } else {
    next = w === undefined
      ? { id: `${key}@${data.r}`, first: at, due: at + pace.waitMs, events: [data.e], size: 1 }
      : { ...w, events: [...w.events, data.e], size: w.size + 1 };
  }
  s = { ...s, w: next };
  if (data.id !== undefined) s = { ...s, ids: { ...s.ids, [data.id]: next.id }, idsUntil: at + pace.dedupMs };
  else if (data.src !== undefined) s = { ...s, seen: { ...s.seen, [data.src]: data.off! }, idsUntil: at + pace.dedupMs };
  fx.reply({ runId: next.id, duplicate: false } satisfies PaceReceipt);
  if (pace.kind === 'batch' && next.size >= pace.max) s = close(s, subscriber, key, fx);
  return s;
}
