/**
 * Parked keys' states as bytes in one buffer, so that an idle key costs no object: each entry is
 * `[length u32][UTF-8 JSON]`, found by its offset. Freed entries are garbage until `compact` copies the live
 * ones into a fresh buffer (the owner of the offsets rewrites them as it goes), which it does once the
 * garbage outweighs what is live, so the cost is spread over the frees that made it.
 */
export class StateArena {
  private buf = Buffer.allocUnsafe(64 * 1024);
  private used = 0;
  private garbage = 0;

  /** Stores a state's JSON text; returns its offset. */
  put(json: string): number {
    const length = Buffer.byteLength(json);
    if (this.used + 4 + length > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + 4 + length));
      this.buf.copy(bigger, 0, 0, this.used);
      this.buf = bigger;
    }
    const at = this.used;
    this.buf.writeUInt32LE(length, at);
    this.buf.write(json, at + 4, length);
    this.used += 4 + length;
    return at;
  }

  /** Makes room for `bytes` more bytes of entries at once (a restore that knows about how many), not by doubling. */
  reserve(bytes: number): void {
    if (this.used + bytes <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(this.used + bytes);
    this.buf.copy(bigger, 0, 0, this.used);
    this.buf = bigger;
  }

  /** The JSON text stored at `offset`. */
  text(offset: number): string {
    return this.buf.toString('utf8', offset + 4, offset + 4 + this.buf.readUInt32LE(offset));
  }

  /** The entry at `offset` is no longer needed. When none is left the buffer starts again from its start. */
  free(offset: number): void {
    this.garbage += 4 + this.buf.readUInt32LE(offset);
    if (this.garbage === this.used) this.used = this.garbage = 0;
  }

  /** True when compacting is worth it: garbage outweighs live entries (and passes 64 KiB). */
  get wasteful(): boolean {
    return this.garbage > 64 * 1024 && this.garbage > this.used - this.garbage;
  }

  /**
   * Copies the live entries into a fresh buffer. `remapAll` must call `move(offset)` once for every live
   * entry and store the new offset it returns.
   */
  compact(remapAll: (move: (offset: number) => number) => void): void {
    const old = this.buf;
    this.buf = Buffer.allocUnsafe(Math.max(64 * 1024, 2 * (this.used - this.garbage)));
    this.used = 0;
    this.garbage = 0;
    const buf = this.buf;
    remapAll((offset) => {
      const end = offset + 4 + old.readUInt32LE(offset);
      const at = this.used;
      // Entries are small: a loop beats a call into Buffer.copy for each.
      for (let i = offset, j = at; i < end; i++, j++) buf[j] = old[i]!;
      this.used += end - offset;
      return at;
    });
  }

  /** Bytes held. */
  bytes(): number {
    return this.buf.byteLength;
  }
}
