/**
 * The pace codec: the one place that knows the compact form a coordinator's events and states take in the
 * journal and in snapshots (and while a key is parked), and reads it back into the plain form of state.ts.
 *
 * Versions. Every state this code writes (in a snapshot, or parked) carries `v: 1`; an `event` record carries
 * its version only when it is not 1 (a record is written for every event, and is the hot path: six bytes
 * each). A record or state without `v` is version 1 (those written before the mark existed are too), and
 * so is the older state with one `idsUntil` for all its remembered IDs, which decodes into today's per-ID
 * form. A `v` this code does not know (written by a later release) is refused with `STORE_CORRUPT`, naming
 * it: nothing is guessed. A new form gets the next number, written in records and states alike, and its
 * decoder keeps reading every earlier one.
 *
 * Version 1, the fields:
 *   event record data  `e` event, `r` run UUID (`''` when the sender minted none), `o` order (left out for 0),
 *                      `id` event ID, or `src` (`topic/partition`) and `off` (offset) of a broker delivery
 *   state              `w` the open window, `q` runs waiting for the rate, `runs` runs started, `starts` the
 *                      rate's history (each left out when empty); `ids idOrder idUntil idHead seen seenUntil`
 *                      the remembered IDs and offsets, as state.ts names them; `p: 1` in a pause coordinator
 *                      while its subscriber is paused (a release before it reads a pause as none)
 *   run (in w, q, runs) `id` run ID, `events`, `size`, `o` order (left out for 0); a window's `first` (opened)
 *                      and `due` (closes); a started run's `at`
 */
import { SluiceError, show } from '../core/errors.js';
import type { StateCodec } from '../shard/rules.js';
import {
  type Held,
  type OpenWindow,
  type PaceEvent,
  type PaceState,
  type PendingRun,
  type Remembered,
  type StartedRun,
} from './state.js';

/** The version this code writes. */
export const PACE_CODEC_VERSION = 1;

/** An `event` record's data, as the journal keeps it. */
export interface EventJson {
  readonly v?: number;
  readonly e: unknown;
  readonly r: string;
  readonly o?: number;
  readonly id?: string;
  readonly src?: string;
  readonly off?: number;
  readonly t?: number;
}

interface RunJson {
  readonly id: string;
  readonly events: readonly unknown[];
  readonly size: number;
  readonly o?: number;
}
interface WindowJson extends RunJson {
  readonly first: number;
  readonly due: number;
}
interface StartedJson extends RunJson {
  readonly at: number;
}

/** A coordinator's state, as a snapshot keeps it. */
export interface StateJson extends Remembered {
  readonly v?: number;
  readonly w?: WindowJson;
  readonly q?: readonly RunJson[];
  readonly runs?: readonly StartedJson[];
  readonly starts?: readonly number[];
  /** 1 while the pause coordinator's subscriber is paused. */
  readonly p?: 1;
  /** Written by earlier code: when every remembered ID and offset was forgotten at once. */
  readonly idsUntil?: number;
}

/** Refuses a version this code does not know. */
function checkVersion(v: unknown, what: string): void {
  if (v !== undefined && v !== PACE_CODEC_VERSION)
    throw new SluiceError(
      'STORE_CORRUPT',
      `pace: ${what} is of codec version ${show(v)}, and this version of sluice reads version ${PACE_CODEC_VERSION} only (was the store written by a later release?)`,
    );
}

/** The field of an event record's data that holds the event (see {@link encodeEvent}). */
export const EVENT_FIELD = 'e';

/**
 * An event record's data: what the sender's side journals. Without `e` when `withEvent` is false: the rest,
 * for a journal that writes the event's own JSON text beside it, as field {@link EVENT_FIELD}.
 */
export function encodeEvent(e: PaceEvent): EventJson;
export function encodeEvent(e: PaceEvent, withEvent: false): Omit<EventJson, 'e'>;
export function encodeEvent(e: PaceEvent, withEvent = true): Omit<EventJson, 'e'> {
  // Version 1 is written unmarked (see the header); a later version writes `v` here.
  const json: { -readonly [K in keyof EventJson]?: EventJson[K] } & { r: string } = withEvent
    ? { e: e.event, r: e.runUuid }
    : { r: e.runUuid };
  if (e.order !== 0) json.o = e.order;
  if (e.source !== undefined) {
    json.src = e.source.partition;
    json.off = e.source.offset;
  } else if (e.eventId !== undefined) json.id = e.eventId;
  if (e.time !== undefined) json.t = e.time;
  return json;
}

/** An event record's data read back. */
export function decodeEvent(data: unknown): PaceEvent {
  const json = data as EventJson;
  checkVersion(json.v, 'an event record');
  const event: { -readonly [K in keyof PaceEvent]: PaceEvent[K] } = {
    event: json.e,
    runUuid: json.r,
    order: json.o ?? 0,
  };
  if (json.src !== undefined) event.source = { partition: json.src, offset: json.off! };
  if (json.id !== undefined) event.eventId = json.id;
  if (json.t !== undefined) event.time = json.t;
  return event;
}

// Object literals, not spreads: a restore decodes every key of a snapshot, and a spread costs ten times as much.
const runJson = (r: PendingRun): RunJson =>
  r.order !== 0
    ? { id: r.runId, events: r.events, size: r.size, o: r.order }
    : { id: r.runId, events: r.events, size: r.size };
const windowJson = (w: OpenWindow): WindowJson =>
  w.order !== 0
    ? { id: w.runId, events: w.events, size: w.size, o: w.order, first: w.openedAt, due: w.closesAt }
    : { id: w.runId, events: w.events, size: w.size, first: w.openedAt, due: w.closesAt };
const startedJson = (r: StartedRun): StartedJson =>
  r.order !== 0
    ? { id: r.runId, events: r.events, size: r.size, o: r.order, at: r.startedAt }
    : { id: r.runId, events: r.events, size: r.size, at: r.startedAt };
const runOf = (j: RunJson): PendingRun => ({ runId: j.id, events: j.events, size: j.size, order: j.o ?? 0 });
const startedOf = (j: StartedJson): StartedRun => ({
  runId: j.id,
  events: j.events,
  size: j.size,
  order: j.o ?? 0,
  startedAt: j.at,
});

/** A state as a snapshot keeps it. */
export function encodeState(s: PaceState): StateJson {
  const json: { -readonly [K in keyof StateJson]: StateJson[K] } = { v: PACE_CODEC_VERSION };
  if (s.stage === 'gathering') json.w = windowJson(s.window);
  if (s.waiting.length > 0) json.q = s.waiting.map(runJson);
  if (s.running.length > 0) json.runs = s.running.map(startedJson);
  if (s.history.length > 0) json.starts = s.history;
  if (s.paused === true) json.p = 1;
  if (s.ids !== undefined) {
    json.ids = s.ids;
    json.idOrder = s.idOrder;
    json.idUntil = s.idUntil;
    json.idHead = s.idHead;
  }
  if (s.seen !== undefined) {
    json.seen = s.seen;
    json.seenUntil = s.seenUntil;
  }
  return json;
}

/** A state read back from a snapshot (or a parked key). */
export function decodeState(data: unknown): PaceState {
  const json = data as StateJson;
  checkVersion(json.v, 'a coordinator state');
  const waiting = json.q?.map(runOf) ?? [];
  const running = json.runs?.map(startedOf) ?? [];
  const history = json.starts ?? [];
  const w = json.w;
  const state: PaceState =
    w === undefined
      ? { stage: 'quiet', waiting, running, history }
      : {
          stage: 'gathering',
          window: { runId: w.id, events: w.events, size: w.size, order: w.o ?? 0, openedAt: w.first, closesAt: w.due },
          waiting,
          running,
          history,
        };
  if (json.p === 1) Object.assign(state, { paused: true });
  return json.ids === undefined && json.seen === undefined ? state : Object.assign(state, remembered(json));
}

/**
 * The remembered IDs and offsets; those of the earlier form (all forgotten at once, at `idsUntil`) each
 * forgotten then.
 */
function remembered(json: StateJson): Partial<Held> {
  const out: { -readonly [K in keyof Held]?: Held[K] } = {};
  const idsUntil = json.idsUntil;
  const order = idsUntil === undefined ? json.idOrder : json.ids && Object.keys(json.ids);
  if (json.ids !== undefined && order !== undefined && order.length > 0) {
    out.ids = nullPrototype(json.ids);
    out.idOrder = order;
    out.idUntil = idsUntil === undefined ? json.idUntil : order.map(() => idsUntil);
    out.idHead = idsUntil === undefined ? json.idHead : 0;
  }
  if (json.seen !== undefined) {
    out.seen = nullPrototype(json.seen);
    out.seenUntil = json.seenUntil ?? idsUntil;
  }
  return out;
}

/**
 * A parsed object as a null-prototype one: an own `__proto__` of a parsed object is read as its value, and
 * set on a null-prototype object as an own property.
 */
function nullPrototype<V>(o: Readonly<Record<string, V>>): Record<string, V> {
  const out = Object.create(null) as Record<string, V>;
  for (const k of Object.keys(o)) out[k] = o[k]!;
  return out;
}

/** The pace rules' state codec, for the shard core. */
export const paceCodec: StateCodec<PaceState> = { encode: encodeState, decode: decodeState };
