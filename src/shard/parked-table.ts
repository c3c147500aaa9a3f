/**
 * Idle coordinators, parked: per key a fixed-size entry — the LSN of its snapshot and its earliest timer —
 * in typed arrays with open addressing (linear probing), keys as UTF-8 bytes in one arena. No object per
 * key, so memory does not grow with objects for idle keys, and there is no Map size limit (V8's Map stops
 * at 2^24 entries). Entries are grouped in chunks of 1,024 slots, each knowing (a lower bound of) its
 * earliest timer, so a sweep for timers coming due skips the chunks with none.
 */
/** A slot's tag: 0 empty, 1 deleted, else 2 + (the top bits of the key's hash) — the slot is full. */
const EMPTY = 0;
const DELETED = 1;
const tagOf = (hash: number): number => 2 + ((hash >>> 24) % 254);
const CHUNK_BITS = 10;
const MAX_LOAD = 0.75;

export class ParkedTable {
  private capacity: number;
  /** Per slot: empty, deleted, or full with a byte of the key's hash (most missing probes end there). */
  private tags!: Uint8Array;
  private keyOffset!: Uint32Array;
  private keyLength!: Uint16Array;
  /** Snapshot LSNs in 48 bits: the low 32 here, the high 16 in `lsnHigh`. */
  private lsnLow!: Uint32Array;
  private lsnHigh!: Uint16Array;
  private timers!: Float64Array;
  private chunkMin!: Float64Array;
  private arena: Buffer;
  private arenaUsed = 0;
  private scratch = Buffer.allocUnsafe(256);
  private used = 0;
  /** Parked keys. */
  size = 0;

  constructor(initialCapacity = 1 << CHUNK_BITS) {
    this.capacity = Math.max(1 << CHUNK_BITS, 2 ** Math.ceil(Math.log2(initialCapacity)));
    this.allocate(this.capacity);
    this.arena = Buffer.allocUnsafe(this.capacity * 16);
  }

  /** Parks (or updates) a key: its snapshot's LSN and its timer (`NaN` for none). */
  set(key: string, snapshotLsn: number, timerAtMs: number): void {
    if ((this.used + 1) / this.capacity > MAX_LOAD) this.resize(this.size * 2 + 1 > this.capacity * MAX_LOAD ? this.capacity * 2 : this.capacity);
    const bytes = this.encode(key);
    const hash = hashBytes(this.scratch, bytes);
    let slot = this.find(hash, bytes);
    if (slot < 0) {
      slot = this.freeSlot(hash);
      if (this.tags[slot] === EMPTY) this.used++;
      this.tags[slot] = tagOf(hash);
      this.keyOffset[slot] = this.store(bytes);
      this.keyLength[slot] = bytes;
      this.size++;
    }
    this.setLsn(slot, snapshotLsn);
    this.timers[slot] = timerAtMs;
    const chunk = slot >>> CHUNK_BITS;
    if (timerAtMs < this.chunkMin[chunk]!) this.chunkMin[chunk] = timerAtMs;
  }

  /** The parked key's snapshot LSN, or undefined when it is not parked. */
  snapshotLsn(key: string): number | undefined {
    const slot = this.lookup(key);
    return slot < 0 ? undefined : this.lsnAt(slot);
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
    this.size--;
    return true;
  }

  /**
   * Calls `visit` for every parked key whose timer is at or before `untilMs`, skipping chunks whose earliest
   * timer is later; tightens each visited chunk's bound as it goes.
   */
  sweep(untilMs: number, visit: (key: string, timerAtMs: number) => void): void {
    const chunks = this.capacity >>> CHUNK_BITS;
    for (let c = 0; c < chunks; c++) {
      if (!(this.chunkMin[c]! <= untilMs)) continue;
      let min = Number.POSITIVE_INFINITY;
      const end = (c + 1) << CHUNK_BITS;
      for (let slot = c << CHUNK_BITS; slot < end; slot++) {
        if (this.tags[slot]! < 2) continue;
        const at = this.timers[slot]!;
        if (at <= untilMs) visit(this.keyAt(slot), at);
        else if (at < min) min = at;
      }
      this.chunkMin[c] = min;
    }
  }

  /** Bytes held by the table's arrays and key arena (what a parked key costs). */
  bytes(): number {
    return this.capacity * (1 + 4 + 2 + 4 + 2 + 8) + this.chunkMin.byteLength + this.arena.byteLength;
  }

  private lookup(key: string): number {
    const bytes = this.encode(key);
    return this.find(hashBytes(this.scratch, bytes), bytes);
  }

  private encode(key: string): number {
    const need = Buffer.byteLength(key);
    if (need > 0xffff) throw new RangeError(`ParkedTable: a key may take at most 65,535 bytes, got ${need}`);
    if (need > this.scratch.length) this.scratch = Buffer.allocUnsafe(need * 2);
    return this.scratch.write(key, 0);
  }

  private find(hash: number, length: number): number {
    const mask = this.capacity - 1;
    for (let slot = hash & mask, probes = 0; probes < this.capacity; slot = (slot + 1) & mask, probes++) {
      const tag = this.tags[slot];
      if (tag === EMPTY) return -1;
      if (tag === tagOf(hash) && this.keyLength[slot] === length) {
        const off = this.keyOffset[slot]!;
        if (this.scratch.compare(this.arena, off, off + length, 0, length) === 0) return slot;
      }
    }
    return -1;
  }

  private freeSlot(hash: number): number {
    const mask = this.capacity - 1;
    let slot = hash & mask;
    while (this.tags[slot]! >= 2) slot = (slot + 1) & mask;
    return slot;
  }

  private setLsn(slot: number, lsn: number): void {
    if (!(Number.isInteger(lsn) && lsn >= 0 && lsn < 2 ** 48)) throw new RangeError(`ParkedTable: an LSN must be an integer below 2^48, got ${lsn}`);
    this.lsnLow[slot] = lsn % 0x1_0000_0000;
    this.lsnHigh[slot] = Math.floor(lsn / 0x1_0000_0000);
  }

  private lsnAt(slot: number): number {
    return this.lsnLow[slot]! + this.lsnHigh[slot]! * 0x1_0000_0000;
  }

  private store(length: number): number {
    if (this.arenaUsed + length > this.arena.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.arenaUsed + length));
      this.arena.copy(bigger, 0, 0, this.arenaUsed);
      this.arena = bigger;
    }
    const off = this.arenaUsed;
    this.scratch.copy(this.arena, off, 0, length);
    this.arenaUsed += length;
    return off;
  }

  private keyAt(slot: number): string {
    const off = this.keyOffset[slot]!;
    return this.arena.toString('utf8', off, off + this.keyLength[slot]!);
  }

  private allocate(capacity: number): void {
    this.tags = new Uint8Array(capacity);
    this.keyOffset = new Uint32Array(capacity);
    this.keyLength = new Uint16Array(capacity);
    this.lsnLow = new Uint32Array(capacity);
    this.lsnHigh = new Uint16Array(capacity);
    this.timers = new Float64Array(capacity);
    this.chunkMin = new Float64Array(capacity >>> CHUNK_BITS).fill(Number.POSITIVE_INFINITY);
  }

  /** Rehashes into `capacity` slots, dropping tombstones and compacting the key arena. */
  private resize(capacity: number): void {
    const old = { capacity: this.capacity, tags: this.tags, keyOffset: this.keyOffset, keyLength: this.keyLength, lsnLow: this.lsnLow, lsnHigh: this.lsnHigh, timers: this.timers, arena: this.arena };
    this.capacity = capacity;
    this.allocate(capacity);
    this.arena = Buffer.allocUnsafe(Math.max(16 * 1024, this.arenaUsed));
    this.arenaUsed = 0;
    this.used = 0;
    const mask = capacity - 1;
    for (let i = 0; i < old.capacity; i++) {
      if (old.tags[i]! < 2) continue;
      const length = old.keyLength[i]!;
      const hash = hashBytes(old.arena, length, old.keyOffset[i]!);
      let slot = hash & mask;
      while (this.tags[slot]! >= 2) slot = (slot + 1) & mask;
      const off = this.arenaUsed;
      old.arena.copy(this.arena, off, old.keyOffset[i]!, old.keyOffset[i]! + length);
      this.arenaUsed += length;
      this.tags[slot] = old.tags[i]!;
      this.keyOffset[slot] = off;
      this.keyLength[slot] = length;
      this.lsnLow[slot] = old.lsnLow[i]!;
      this.lsnHigh[slot] = old.lsnHigh[i]!;
      this.timers[slot] = old.timers[i]!;
      const chunk = slot >>> CHUNK_BITS;
      if (old.timers[i]! < this.chunkMin[chunk]!) this.chunkMin[chunk] = old.timers[i]!;
      this.used++;
    }
  }
}

/** FNV-1a over `length` bytes of `buf` from `offset`. */
function hashBytes(buf: Buffer, length: number, offset = 0): number {
  let hash = 0x811c9dc5;
  for (let i = offset; i < offset + length; i++) hash = Math.imul(hash ^ buf[i]!, 0x01000193);
  return hash >>> 0;
}
