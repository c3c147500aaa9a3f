import { fromHalves, high32, low32 } from '../core/u64.js';
import { hashBytes, KeyEncoder, keyOf, spanOf } from './parked-keys.js';

/**
 * Idle coordinators, parked: per key a fixed-size entry — a 48-bit reference to where its state can be read
 * back (its offset in a `StateArena`) and its earliest timer —
 * in typed arrays with open addressing (linear probing), keys as bytes in one arena. No object per
 * key, so memory does not grow with objects for idle keys, and there is no Map size limit (V8's Map stops
 * at 2^24 entries). Entries are grouped in chunks of 1,024 slots, each knowing (a lower bound of) its
 * earliest timer, so a sweep for timers coming due skips the chunks with none.
 *
 * A key comes back exactly as it was parked (see parked-keys.ts for how the arena holds it). The bytes of
 * unparked keys are garbage in the arena until it is compacted, once they outweigh the live keys' (as
 * `StateArena` does).
 */
/** A slot's tag: 0 empty, 1 deleted, else 2 + (the top bits of the key's hash) — the slot is full. */
const EMPTY = 0;
const DELETED = 1;
const tagOf = (hash: number): number => 2 + ((hash >>> 24) % 254);
const CHUNK_BITS = 10;
const MAX_LOAD = 0.75;
/** The key arena is compacted once its garbage passes this and outweighs the live keys. */
const ARENA_SLACK = 64 * 1024;

/** Refuses a reference the slot arrays cannot hold: anything but an integer from 0 to 2^48 - 1. */
function checkRef(ref: number): void {
  if (!(Number.isInteger(ref) && ref >= 0 && ref < 2 ** 48))
    throw new RangeError(`ParkedTable: a reference must be an integer from 0 to 2^48 - 1, got ${ref}`);
}

/** A table with no free slot: it grows before that, so this is a bug. */
// Stryker disable next-line all: reached only by a broken table, where any throw ends the probe
const full = (): Error => new Error('ParkedTable: no free slot (a bug: the table grows before it is full)');

/**
 * The slot in `tags` (a power of two of them) of the key whose entry `encoder` holds, or -1. A quarter of
 * the slots at least are empty (the table grows before): the probe ends at one.
 */
function probe(
  tags: Uint8Array,
  offsets: Uint32Array,
  lengths: Uint16Array,
  arena: Buffer,
  encoder: KeyEncoder,
  hash: number,
): number {
  const mask = tags.length - 1;
  const tag = tagOf(hash);
  let slot = hash & mask;
  // Stryker disable next-line EqualityOperator,UpdateOperator: a bound a table with an empty slot never reaches
  for (let probed = 0; probed <= mask; probed++) {
    const at = tags[slot];
    if (at === EMPTY) return -1;
    if (at === tag && encoder.isAt(arena, offsets[slot]!, lengths[slot]!)) return slot;
    slot = (slot + 1) & mask;
  }
  throw full();
}

export class ParkedTable {
  private capacity: number;
  /** Per slot: empty, deleted, or full with a byte of the key's hash (most missing probes end there). */
  private tags!: Uint8Array;
  private keyOffset!: Uint32Array;
  /** Per slot: the key's UTF-8 byte count, or ESCAPED. */
  private keyLength!: Uint16Array;
  /** References (where a key's state is: an arena offset) in 48 bits: the low 32 here, the high 16 in `refHigh`. */
  private refLow!: Uint32Array;
  private refHigh!: Uint16Array;
  private timers!: Float64Array;
  private chunkMin!: Float64Array;
  private arena: Buffer;
  private arenaUsed = 0;
  /** Bytes of the arena that no parked key uses any more. */
  private arenaGarbage = 0;
  private readonly encoder = new KeyEncoder();
  private used = 0;
  /** Parked keys. */
  size = 0;

  constructor(initialCapacity = 1 << CHUNK_BITS) {
    this.capacity = Math.max(1 << CHUNK_BITS, 2 ** Math.ceil(Math.log2(initialCapacity)));
    this.allocate(this.capacity);
    this.arena = Buffer.allocUnsafe(this.capacity * 16);
  }

  /**
   * Parks (or updates) a key: the reference to its state (an integer from 0 to 2^48 - 1, such as an arena
   * offset) and its timer (`NaN` for none). A reference out of range is refused before anything changes.
   */
  set(key: string, ref: number, timerAtMs: number): void {
    checkRef(ref);
    if ((this.used + 1) / this.capacity > MAX_LOAD)
      this.resize(this.size * 2 + 1 > this.capacity * MAX_LOAD ? this.capacity * 2 : this.capacity);
    const length = this.encoder.encode(key);
    const hash = hashBytes(this.encoder.buf, this.encoder.span);
    let slot = this.find(hash);
    if (slot < 0) {
      if (this.arenaGarbage > ARENA_SLACK && this.arenaGarbage > this.arenaUsed - this.arenaGarbage)
        this.compactArena();
      slot = this.freeSlot(hash);
      if (this.tags[slot] === EMPTY) this.used++;
      this.tags[slot] = tagOf(hash);
      this.keyOffset[slot] = this.store(this.encoder.span);
      this.keyLength[slot] = length;
      this.size++;
    }
    this.setRef(slot, ref);
    this.timers[slot] = timerAtMs;
    this.lowerBound(slot, timerAtMs);
  }

  /** Makes room for `keys` more keys at once (a restore that knows how many it parks), instead of by doubling. */
  reserve(keys: number): void {
    const capacity = 2 ** Math.ceil(Math.log2((this.used + keys + 1) / MAX_LOAD));
    if (capacity > this.capacity) this.resize(capacity);
  }

  /** The parked key's reference, or undefined when it is not parked. */
  ref(key: string): number | undefined {
    const slot = this.lookup(key);
    return slot < 0 ? undefined : this.refAt(slot);
  }

  /** The parked key's reference and timer (`NaN` for none) in one lookup, or undefined when it is not parked. */
  entry(key: string): { ref: number; timer: number } | undefined {
    const slot = this.lookup(key);
    return slot < 0 ? undefined : { ref: this.refAt(slot), timer: this.timers[slot]! };
  }

  /** The parked key's timer (`NaN` for none), or undefined when it is not parked. */
  timerAt(key: string): number | undefined {
    const slot = this.lookup(key);
    return slot < 0 ? undefined : this.timers[slot];
  }

  /** Unparks a key (it was loaded, or retired). */
  delete(key: string): boolean {
    const slot = this.lookup(key);
    if (slot < 0) return false;
    this.tags[slot] = DELETED;
    this.arenaGarbage += spanOf(this.arena, this.keyOffset[slot]!, this.keyLength[slot]!);
    this.size--;
    return true;
  }

  /**
   * Calls `visit` for parked keys whose timer is at or before `untilMs` — at most `max` of them — skipping
   * chunks whose earliest timer is later. The visited keys' timers no longer count towards their chunk's
   * earliest (the caller moves them elsewhere, or unparks the key); each chunk swept to its end has its bound
   * tightened. `visit` may `delete` the key it is given, nothing else.
   */
  sweep(untilMs: number, visit: (key: string, timerAtMs: number) => void, max = Number.POSITIVE_INFINITY): void {
    const chunks = this.chunkMin.length;
    let visited = 0;
    for (let c = 0; c < chunks; c++) {
      if (!(this.chunkMin[c]! <= untilMs)) continue;
      let min = Number.POSITIVE_INFINITY;
      const end = (c + 1) << CHUNK_BITS;
      for (let slot = c << CHUNK_BITS; slot < end; slot++) {
        if (this.tags[slot]! < 2) continue;
        const at = this.timers[slot]!;
        if (!(at <= untilMs)) {
          // Stryker disable next-line EqualityOperator: at an equal value, either keeps the same minimum
          if (at < min) min = at; // (NaN, no timer, is never less)
          continue;
        }
        if (visited === max) return; // this chunk's bound stays as it was: still a lower bound
        visited++;
        visit(this.keyAt(slot), at);
      }
      this.chunkMin[c] = min;
    }
  }

  /** The earliest parked timer, exactly (tightening chunk bounds on the way), or undefined when none is set. */
  earliest(): number | undefined {
    const chunks = this.chunkMin.length;
    // Each look either finds the earliest or makes one chunk's bound exact (an exact bound is looked at once
    // more at most, and then it is the answer): at most a look per chunk and one more.
    // Stryker disable next-line UpdateOperator: a bound the looks never reach
    for (let look = 0; look <= chunks; look++) {
      // The chunk with the lowest bound (none: no timer is set).
      let first = -1;
      let lowest = Number.POSITIVE_INFINITY;
      for (let c = 0; c < chunks; c++) {
        if (this.chunkMin[c]! < lowest) {
          first = c;
          lowest = this.chunkMin[c]!;
        }
      }
      if (first < 0) return undefined;
      let min = Number.POSITIVE_INFINITY;
      const end = (first + 1) << CHUNK_BITS;
      for (let slot = first << CHUNK_BITS; slot < end; slot++)
        // Stryker disable next-line EqualityOperator: at an equal value, either keeps the same minimum
        if (this.tags[slot]! >= 2 && this.timers[slot]! < min) min = this.timers[slot]!;
      if (min === lowest) return min; // exact, and no chunk's bound is lower
      this.chunkMin[first] = min; // tightened: look again
    }
    // Stryker disable next-line all: reached only by a broken table
    throw new Error('ParkedTable: a chunk bound is above a timer of its chunk (a bug)');
  }

  /** Every parked key, in slot order. The table must not change while this runs. */
  *keys(): IterableIterator<string> {
    for (let slot = 0; slot < this.capacity; slot++) if (this.tags[slot]! >= 2) yield this.keyAt(slot);
  }

  /**
   * The keys parked now, to be read later a few at a time while the table goes on changing (a snapshot):
   * copies of the slot arrays (7 bytes a slot) and the key arena as it is (a grown or rehashed table
   * writes a new one). `unread(key)` says whether a key is among them and not read yet.
   */
  frozenKeys(): { next(max: number): string[]; unread(key: string): boolean } {
    const tags = this.tags.slice();
    const offsets = this.keyOffset.slice();
    const lengths = this.keyLength.slice();
    const arena = this.arena; // compacting or resizing writes a new one: this one stays as it is
    const encoder = new KeyEncoder();
    let slot = 0;
    return {
      next(max) {
        const out: string[] = [];
        for (; out.length < max; slot++) {
          const tag = tags[slot];
          if (tag === undefined) break; // read to the end
          if (tag >= 2) out.push(keyOf(arena, offsets[slot]!, lengths[slot]!));
        }
        return out;
      },
      unread(key) {
        encoder.encode(key);
        return probe(tags, offsets, lengths, arena, encoder, hashBytes(encoder.buf, encoder.span)) >= slot;
      },
    };
  }

  /** Replaces every parked key's reference by `move(ref)` (its state was moved: an arena compacted). */
  remapRefs(move: (ref: number) => number): void {
    for (let slot = 0; slot < this.capacity; slot++) {
      if (this.tags[slot]! < 2) continue;
      const moved = move(this.refAt(slot));
      checkRef(moved);
      this.setRef(slot, moved);
    }
  }

  /** Bytes held by the table's arrays and key arena (what a parked key costs). */
  bytes(): number {
    return this.capacity * (1 + 4 + 2 + 4 + 2 + 8) + this.chunkMin.byteLength + this.arena.byteLength;
  }

  private lookup(key: string): number {
    this.encoder.encode(key);
    return this.find(hashBytes(this.encoder.buf, this.encoder.span));
  }

  /** The slot of the key whose entry the encoder holds, or -1. */
  private find(hash: number): number {
    return probe(this.tags, this.keyOffset, this.keyLength, this.arena, this.encoder, hash);
  }

  /** The first slot from the hash's on that holds no key (empty, or deleted). */
  private freeSlot(hash: number): number {
    const mask = this.capacity - 1;
    let slot = hash & mask;
    // Stryker disable next-line EqualityOperator,UpdateOperator: a bound a table with a free slot never reaches
    for (let probed = 0; probed <= mask; probed++) {
      if (this.tags[slot]! < 2) return slot;
      slot = (slot + 1) & mask;
    }
    throw full();
  }

  /** Writes a checked reference (`checkRef`) into `slot`. */
  private setRef(slot: number, ref: number): void {
    this.refLow[slot] = low32(ref);
    this.refHigh[slot] = high32(ref);
  }

  private refAt(slot: number): number {
    return fromHalves(this.refLow[slot]!, this.refHigh[slot]!);
  }

  private store(length: number): number {
    if (this.arenaUsed + length > this.arena.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.arenaUsed + length));
      this.arena.copy(bigger, 0, 0, this.arenaUsed);
      this.arena = bigger;
    }
    const off = this.arenaUsed;
    this.encoder.buf.copy(this.arena, off, 0, length);
    this.arenaUsed += length;
    return off;
  }

  /**
   * Copies the parked keys' bytes into a fresh arena, leaving the garbage behind (a frozen snapshot keeps the old one).
   */
  private compactArena(): void {
    const old = this.arena;
    this.arena = Buffer.allocUnsafe(Math.max(16 * 1024, 2 * (this.arenaUsed - this.arenaGarbage)));
    this.arenaUsed = 0;
    this.arenaGarbage = 0;
    for (let slot = 0; slot < this.capacity; slot++) {
      if (this.tags[slot]! < 2) continue;
      const from = this.keyOffset[slot]!;
      const length = spanOf(old, from, this.keyLength[slot]!);
      old.copy(this.arena, this.arenaUsed, from, from + length);
      this.keyOffset[slot] = this.arenaUsed;
      this.arenaUsed += length;
    }
  }

  /** Lowers the bound of `slot`'s chunk to a timer set there (NaN, no timer, lowers nothing). */
  private lowerBound(slot: number, timerAtMs: number): void {
    const chunk = slot >>> CHUNK_BITS;
    // Stryker disable next-line EqualityOperator: at an equal value, the bound stays the same
    if (timerAtMs < this.chunkMin[chunk]!) this.chunkMin[chunk] = timerAtMs;
  }

  private keyAt(slot: number): string {
    return keyOf(this.arena, this.keyOffset[slot]!, this.keyLength[slot]!);
  }

  private allocate(capacity: number): void {
    this.tags = new Uint8Array(capacity);
    this.keyOffset = new Uint32Array(capacity);
    this.keyLength = new Uint16Array(capacity);
    this.refLow = new Uint32Array(capacity);
    this.refHigh = new Uint16Array(capacity);
    this.timers = new Float64Array(capacity);
    this.chunkMin = new Float64Array(capacity >>> CHUNK_BITS).fill(Number.POSITIVE_INFINITY);
  }

  /** Rehashes into `capacity` slots, dropping tombstones and compacting the key arena. */
  private resize(capacity: number): void {
    const old = {
      capacity: this.capacity,
      tags: this.tags,
      keyOffset: this.keyOffset,
      keyLength: this.keyLength,
      refLow: this.refLow,
      refHigh: this.refHigh,
      timers: this.timers,
      arena: this.arena,
    };
    this.capacity = capacity;
    this.allocate(capacity);
    this.arena = Buffer.allocUnsafe(Math.max(16 * 1024, this.arenaUsed));
    this.arenaUsed = 0;
    this.arenaGarbage = 0;
    this.used = this.size; // no tombstones
    for (let i = 0; i < old.capacity; i++) {
      if (old.tags[i]! < 2) continue;
      const length = spanOf(old.arena, old.keyOffset[i]!, old.keyLength[i]!);
      /* eslint-disable @typescript-eslint/no-unnecessary-type-assertion -- a '!' as on every index read: these
         offsets are optional parameters, and a missing slot must not pass as 0 */
      const slot = this.freeSlot(hashBytes(old.arena, length, old.keyOffset[i]!));
      const off = this.arenaUsed;
      old.arena.copy(this.arena, off, old.keyOffset[i]!, old.keyOffset[i]! + length);
      /* eslint-enable @typescript-eslint/no-unnecessary-type-assertion */
      this.arenaUsed += length;
      this.tags[slot] = old.tags[i]!;
      this.keyOffset[slot] = off;
      this.keyLength[slot] = old.keyLength[i]!;
      this.refLow[slot] = old.refLow[i]!;
      this.refHigh[slot] = old.refHigh[i]!;
      this.timers[slot] = old.timers[i]!;
      this.lowerBound(slot, old.timers[i]!);
    }
  }
}
