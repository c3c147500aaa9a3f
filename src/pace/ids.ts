/**
 * A coordinator's memory of what it has seen, for `dedup`: the event IDs of `app.send` (each with the run it
 * joined) and, for broker deliveries, the highest offset per `topic/partition`.
 *
 * IDs are the user's strings, so they live in null-prototype objects and are read only as own properties:
 * `constructor` or `__proto__` is an ID like any other. A busy key can remember many IDs, so this is the one
 * part of a state changed in place: copying the ID map on every event made N events on a key cost O(N²).
 * Each ID is forgotten `dedup` after it arrived, in arrival order (a queue: `idOrder`/`idUntil` from
 * `idHead`), so a key that never goes quiet still forgets, and every event costs the same however many IDs
 * the key remembers. The core keeps no other reference to a state it handed to `apply`, and a snapshot
 * serialises a state before its key changes again, so changing it in place is safe.
 */
import type { PaceState } from './state.js';

/** Forgotten entries at the queue's front are cut away once they are this many and at least half of it. */
const CUT = 1_024;

/** `o[k]` when `k` is an own property of `o`; never a property of Object.prototype. */
export function own<V>(o: Readonly<Record<string, V>> | undefined, k: string): V | undefined {
  return o !== undefined && Object.hasOwn(o, k) ? o[k] : undefined;
}

/** `o` as a null-prototype object that may be changed: itself when it is one, else a copy. */
function owned<V>(o: Readonly<Record<string, V>> | undefined): Record<string, V> {
  if (o !== undefined && Object.getPrototypeOf(o) === null) return o;
  const out = Object.create(null) as Record<string, V>;
  // An own `__proto__` of a parsed object is read as its value, and set on a null-prototype object as an own property.
  if (o !== undefined) for (const k of Object.keys(o)) out[k] = o[k]!;
  return out;
}

/** When the next remembered ID or offset is forgotten, if any is remembered. */
export function forgetAt(s: PaceState): number | undefined {
  const id = s.idUntil?.[s.idHead ?? 0];
  const seen = s.seenUntil;
  return id === undefined ? seen : seen === undefined ? id : Math.min(id, seen);
}

/** True when the state remembers no ID and no offset. */
export const remembersNothing = (s: PaceState): boolean => s.idOrder === undefined && s.seen === undefined;

/** The IDs and offsets whose time is up at `at` are forgotten. */
export function forget(s: PaceState, at: number): PaceState {
  if (s.seenUntil !== undefined && at >= s.seenUntil) s = { ...s, seen: undefined, seenUntil: undefined };
  const until = s.idUntil as number[] | undefined;
  let head = s.idHead ?? 0;
  if (until === undefined || !(until[head]! <= at)) return s;
  const order = s.idOrder as string[];
  const ids = owned(s.ids);
  for (; head < until.length && until[head]! <= at; head++) delete ids[order[head]!];
  if (head === until.length) return { ...s, ids: undefined, idOrder: undefined, idUntil: undefined, idHead: undefined };
  if (head >= CUT && 2 * head >= until.length) {
    order.splice(0, head);
    until.splice(0, head);
    head = 0;
  }
  return { ...s, ids, idHead: head };
}

/** The run an event ID joined (`''`: it was dropped), or undefined when the ID is not remembered. */
export const runOfId = (s: PaceState, id: string): string | undefined => own(s.ids, id);

/** The highest offset remembered for a `topic/partition`. */
export const lastOffset = (s: PaceState, src: string): number | undefined => own(s.seen, src);

/** Remembers an event ID as having joined `runId` until `until`. */
export function rememberId(s: PaceState, id: string, runId: string, until: number): PaceState {
  const ids = owned(s.ids);
  ids[id] = runId;
  const order = (s.idOrder ?? []) as string[];
  const untils = (s.idUntil ?? []) as number[];
  order.push(id);
  untils.push(until);
  return { ...s, ids, idOrder: order, idUntil: untils, idHead: s.idHead ?? 0 };
}

/** Remembers a broker delivery's offset for its `topic/partition`, and every offset until `until`. */
export function rememberOffset(s: PaceState, src: string, offset: number, until: number): PaceState {
  const next = { ...s };
  rememberOffsetIn(next, src, offset, until);
  return next;
}

/** {@link rememberOffset} into `s` itself: a state the caller has just copied. */
export function rememberOffsetIn(s: PaceState, src: string, offset: number, until: number): void {
  const seen = owned(s.seen);
  seen[src] = offset;
  const into = s as { seen?: PaceState['seen']; seenUntil?: number };
  into.seen = seen;
  into.seenUntil = until;
}

/** The state without its remembered IDs and offsets (a fault the simulator injects). */
export const withoutIds = (s: PaceState): PaceState => ({
  ...s,
  ids: undefined,
  idOrder: undefined,
  idUntil: undefined,
  idHead: undefined,
  seen: undefined,
  seenUntil: undefined,
});
