import type { ShardSnapshot, SnapshotEntry } from './snapshot-capture.js';

/**
 * A shard snapshot's text: one JSON document, `{"lsn":…,"at":…,"keys":[…]}`, each entry `[key, state, timer or
 * null]` as `JSON.stringify` writes it, one entry a line: a newline before each entry and before the closing
 * `]}` (`JSON.stringify` never writes a newline inside a value, so a line is an entry). Any JSON reader reads
 * it whole, as snapshots were read before they were written a line an entry (and as those earlier ones,
 * all on one line, still are here); {@link readSnapshotText} reads it an entry at a time, never holding every
 * entry's parsed state at once, and gives each entry's state text as the snapshot holds it, so that a
 * parked key keeps that text instead of its state being encoded again.
 */
export const snapshotOpening = (lsn: number, at: number | undefined): string =>
  `{"lsn":${lsn},${at === undefined ? '' : `"at":${at},`}"keys":[`;

/** Entries (each `JSON.stringify([key, state, timer])`) as the text after the opening (`first`) or after entries. */
export const snapshotLines = (entries: readonly string[], first: boolean): string =>
  (first ? '\n' : ',\n') + entries.join(',\n');

/** After the last entry (or the opening, when there is none). */
export const SNAPSHOT_CLOSE = '\n]}';

const KEYS = '"keys":[';

/**
 * A snapshot's LSN, shard time and entries. A snapshot written an entry a line is read a line at a time (its
 * entries are parsed as they are iterated, each once): every entry's fourth element is then its state's JSON
 * text, when the entry was written as `JSON.stringify` writes it. Any other text is parsed whole.
 *
 * @throws SyntaxError when the text is not JSON (the whole text, or a line as it is iterated); `Error` when a
 *   snapshot written a line an entry is cut short or a line is not an entry.
 */
export function readSnapshotText(text: string): ShardSnapshot<unknown> {
  const keysAt = text.indexOf(KEYS);
  const from = keysAt + KEYS.length;
  if (keysAt < 0 || text.charCodeAt(from) !== 10) return JSON.parse(text) as ShardSnapshot<unknown>;
  let head: { lsn: number; at?: number; keys: unknown };
  try {
    head = JSON.parse(`${text.slice(0, from)}]}`) as typeof head;
  } catch {
    return JSON.parse(text) as ShardSnapshot<unknown>; // not this code's layout: whatever it is, read it whole
  }
  const keys = entries(text, from + 1);
  let lines = 0;
  for (let at = text.indexOf('\n', from + 1); at >= 0; at = text.indexOf('\n', at + 1)) lines++;
  const size = { keys: lines, bytes: text.length - from }; // an entry a line; the closing's line has none
  return head.at === undefined ? { lsn: head.lsn, keys, size } : { lsn: head.lsn, at: head.at, keys, size };
}

/** The entries from `start` (the first line's), a line each, until the line `]}` that ends the text. */
function* entries(text: string, start: number): Generator<SnapshotEntry<unknown>> {
  let more = true; // a comma ended the last entry's line (or there was none yet)
  for (let at = start, line = 2, first = true; ; line++, first = false) {
    const newline = text.indexOf('\n', at);
    const end = newline < 0 ? text.length : newline;
    if (end - at === 2 && text.startsWith(']}', at)) {
      if (!first && more) throw new Error(`snapshot: line ${line - 1} ends with a comma, and no entry follows`);
      if (text.slice(end).trim() !== '') throw new Error(`snapshot: text after the closing "]}" of line ${line}`);
      return;
    }
    if (!more)
      throw new Error(`snapshot: line ${line - 1} ends without a comma, and line ${line} is not the closing "]}"`);
    if (newline < 0) throw new Error(`snapshot: cut short at line ${line} (no closing "]}")`);
    more = text.charCodeAt(end - 1) === 44; // ','
    const json = text.slice(at, more ? end - 1 : end);
    const entry = JSON.parse(json) as unknown;
    if (!isEntry(entry)) throw new Error(`snapshot: line ${line} is not an entry [key, state, timer or null]`);
    at = end + 1;
    yield withStateText(entry, json);
  }
}

const isEntry = (e: unknown): e is readonly [string, unknown, number | null] =>
  Array.isArray(e) && e.length === 3 && typeof e[0] === 'string' && (e[2] === null || typeof e[2] === 'number');

/**
 * The entry with its state's text from `json`, the entry's own text: `[` the key's JSON `,` the state `,` the
 * timer `]`. The timer, a number or null, holds no comma, so the state ends at the last one. Without it when
 * the key is not written as `JSON.stringify` writes it (then where the state starts is not known).
 */
function withStateText(entry: readonly [string, unknown, number | null], json: string): SnapshotEntry<unknown> {
  const key = JSON.stringify(entry[0]);
  const stateFrom = 1 + key.length + 1;
  if (!json.startsWith(key, 1) || json.charCodeAt(stateFrom - 1) !== 44) return entry;
  return [entry[0], entry[1], entry[2], json.slice(stateFrom, json.lastIndexOf(','))];
}

/** What {@link writeSnapshotText} reads a shard through (a `ShardCore`). */
export interface SnapshotSource {
  beginSnapshot(): { readonly lsn: number; readonly at: number | undefined };
  snapshotChunk(max: number): string[];
  endSnapshot(): void;
}

/**
 * A whole-shard snapshot's text and the LSN it is taken at, serialised `chunk` keys per turn of the event
 * loop, so that a large shard never holds it for long.
 */
export async function writeSnapshotText(
  core: SnapshotSource,
  chunk: number,
): Promise<{ readonly lsn: number; readonly text: Buffer }> {
  const { lsn, at } = core.beginSnapshot();
  const parts: Buffer[] = [Buffer.from(snapshotOpening(lsn, at))];
  try {
    for (let keys = core.snapshotChunk(chunk); keys.length > 0; keys = core.snapshotChunk(chunk)) {
      parts.push(Buffer.from(snapshotLines(keys, parts.length === 1)));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } finally {
    core.endSnapshot();
  }
  parts.push(Buffer.from(SNAPSHOT_CLOSE));
  return { lsn, text: Buffer.concat(parts) };
}
