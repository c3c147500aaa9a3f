import { ParkedTable } from './parked-table.js';
import type { StateCodec } from './rules.js';
import { StateArena } from './state-arena.js';

const AS_IS: StateCodec<never> = { encode: (s) => s, decode: (json) => json as never };

/**
 * Parked keys with their states: a {@link ParkedTable} entry per key (its timer, and the offset of its state
 * in a {@link StateArena}, as JSON). No object per key. A state is parked as its codec encodes it for a
 * snapshot (so a snapshot takes a parked key's JSON as it is), and comes back decoded from that JSON.
 */
export class ParkedStates<S> {
  private readonly table = new ParkedTable();
  private readonly arena = new StateArena();
  /** The earliest parked timer; null when unknown (the earliest may have left), undefined when none. */
  private earliestCache: number | undefined | null = undefined;

  constructor(private readonly codec: StateCodec<S> = AS_IS) {}

  get size(): number {
    return this.table.size;
  }

  /** Parks a key (it must not be parked already): its state and its timer, if any. */
  park(key: string, state: S, timerAtMs: number | undefined): void {
    this.parkEncoded(key, this.codec.encode(state), timerAtMs);
  }

  /**
   * Parks a key whose state is at hand as its codec encodes it (read from a snapshot, which the codec decodes
   * as it decodes what it encodes): kept as that JSON, or as `json` when it is given (the JSON text that
   * `encoded` was parsed from, as a snapshot holds it).
   */
  parkEncoded(key: string, encoded: unknown, timerAtMs: number | undefined, json?: string): void {
    // Compacted here, not as keys leave: a mass wake unparks many and should not pay for it then.
    if (this.arena.wasteful) this.arena.compact((move) => this.table.remapRefs(move));
    this.table.set(key, this.arena.put(json ?? JSON.stringify(encoded)), timerAtMs ?? Number.NaN);
    if (timerAtMs !== undefined && this.earliestCache !== null && !(this.earliestCache! <= timerAtMs))
      this.earliestCache = timerAtMs;
  }

  /** Makes room at once for `keys` more parked keys whose states take about `bytes` bytes of JSON. */
  reserve(keys: number, bytes: number): void {
    this.table.reserve(keys);
    this.arena.reserve(bytes + 4 * keys);
  }

  /** Takes a key out, returning its state and timer; undefined when it is not parked. */
  unpark(key: string): { state: S; timer: number | undefined } | undefined {
    const ref = this.table.ref(key);
    if (ref === undefined) return undefined;
    const timer = this.timerOf(key);
    const state = this.codec.decode(JSON.parse(this.arena.text(ref)));
    this.table.delete(key);
    this.arena.free(ref);
    if (timer !== undefined && timer === this.earliestCache) this.earliestCache = null;
    return { state, timer };
  }

  /** A parked key's snapshot entry, `[key, state, timer or null]` as JSON (the state as it was parked). */
  entryJson(key: string): string | undefined {
    const entry = this.table.entry(key);
    if (!entry) return undefined;
    return `[${JSON.stringify(key)},${this.arena.text(entry.ref)},${Number.isNaN(entry.timer) ? null : entry.timer}]`;
  }

  /** A parked key's state (decoded afresh), without unparking it. */
  state(key: string): S | undefined {
    const ref = this.table.ref(key);
    return ref === undefined ? undefined : this.codec.decode(JSON.parse(this.arena.text(ref)));
  }

  timerOf(key: string): number | undefined {
    const at = this.table.timerAt(key);
    return at === undefined || Number.isNaN(at) ? undefined : at;
  }

  has(key: string): boolean {
    return this.table.ref(key) !== undefined;
  }

  /** The earliest parked timer, or undefined. */
  earliest(): number | undefined {
    if (this.earliestCache === null) this.earliestCache = this.table.earliest();
    return this.earliestCache;
  }

  /** Up to `max` parked keys whose timer is at or before `untilMs` (in table order). */
  due(untilMs: number, max: number): string[] {
    const out: string[] = [];
    this.table.sweep(untilMs, (key) => void out.push(key), max);
    if (out.length > 0) this.earliestCache = null;
    return out;
  }

  keys(): IterableIterator<string> {
    return this.table.keys();
  }

  frozenKeys(): { next(max: number): string[]; unread(key: string): boolean } {
    return this.table.frozenKeys();
  }

  /** Bytes held by the table and the state arena. */
  bytes(): number {
    return this.table.bytes() + this.arena.bytes();
  }
}
