/**
 * Counting bench/peers/streams.ts's results against what the input called for, the same way for both sides.
 * A window is told by its `id` (Kafka Streams: key@session start or key@first seq; Sluice: the run ID, the
 * same on every attempt), so the same window read twice is a duplicate, and two windows where one was due
 * is a split. Events are counted through the windows: a batch names its seqs, a debounced window its count.
 */
import type { Result } from './streams-kafka.js';

export type Mode = 'debounce' | 'batch';

/** What a run's input called for: `perKey` events for each of `keys`, in windows of `batchSize` for batch. */
export interface Expected {
  readonly keys: readonly string[];
  readonly perKey: number;
  readonly mode: Mode;
  readonly batchSize: number;
}

export interface Tally {
  /** Windows the input calls for: one per key (debounce) or perKey / batchSize per key (batch). */
  readonly expectedWindows: number;
  /** Distinct windows read. */
  readonly windows: number;
  /** Results read again for a window already read (the same id). */
  readonly duplicates: number;
  /** Windows beyond those expected, on keys that have every event (a window closed early and one more opened). */
  readonly split: number;
  /** Events in no window. */
  readonly lost: number;
  /** Events in two windows. */
  readonly doubled: number;
}

/** The first result of each window, by key, for the expected keys. */
function windowsByKey(results: readonly Result[], keys: ReadonlySet<string>): Map<string, Map<string, Result>> {
  const byKey = new Map<string, Map<string, Result>>();
  for (const r of results) {
    if (!keys.has(r.key)) continue;
    let windows = byKey.get(r.key);
    if (!windows) byKey.set(r.key, (windows = new Map<string, Result>()));
    if (!windows.has(r.id)) windows.set(r.id, r);
  }
  return byKey;
}

/** Events of a key in its windows: distinct (what is not lost) and in all (distinct + doubled). */
function eventsOf(windows: Iterable<Result>, mode: Mode): { distinct: number; all: number } {
  if (mode === 'debounce') {
    let all = 0;
    for (const w of windows) all += w.count;
    return { distinct: all, all };
  }
  const seen = new Set<number>();
  let all = 0;
  for (const w of windows)
    for (const seq of w.seqs ?? []) {
      seen.add(seq);
      all++;
    }
  return { distinct: seen.size, all };
}

export function tally(results: readonly Result[], e: Expected): Tally {
  const keys = new Set(e.keys);
  const byKey = windowsByKey(results, keys);
  const perKeyWindows = e.mode === 'debounce' ? 1 : Math.ceil(e.perKey / e.batchSize);
  let windows = 0,
    split = 0,
    lost = 0,
    doubled = 0;
  for (const key of e.keys) {
    const w = byKey.get(key) ?? new Map<string, Result>();
    windows += w.size;
    const { distinct, all } = eventsOf(w.values(), e.mode);
    // A debounced window counts its events: more than were sent is an event counted twice.
    const got = Math.min(distinct, e.perKey);
    lost += e.perKey - got;
    doubled += all - got;
    if (got === e.perKey) split += Math.max(0, w.size - perKeyWindows);
  }
  const read = results.filter((r) => keys.has(r.key)).length;
  return { expectedWindows: perKeyWindows * e.keys.length, windows, duplicates: read - windows, split, lost, doubled };
}

/** True once every expected event is in a window read. */
export function accounted(results: readonly Result[], e: Expected): boolean {
  const t = tally(results, e);
  return t.lost === 0;
}

/**
 * For each window (first read), the time from its end to its result being read: the latest event's timestamp
 * plus the gap (debounce), or the batch's last event's timestamp (batch).
 */
export function delays(results: readonly Result[], e: Expected, gapMs: number): number[] {
  const out: number[] = [];
  for (const windows of windowsByKey(results, new Set(e.keys)).values())
    for (const w of windows.values()) out.push(w.readAt - (w.lastTs + (e.mode === 'debounce' ? gapMs : 0)));
  return out.sort((a, b) => a - b);
}

/** The time the last window needed was first read. */
export function lastReadAt(results: readonly Result[], e: Expected): number {
  let last = 0;
  for (const windows of windowsByKey(results, new Set(e.keys)).values())
    for (const w of windows.values()) last = Math.max(last, w.readAt);
  return last;
}
