/**
 * A key's entry in a snapshot: its state as the rules' codec encodes it, its timer (null for none), and, when the
 * snapshot's text is at hand (see snapshot-text.ts), that state's JSON text as the snapshot holds it.
 */
export type SnapshotEntry<S> = readonly [key: string, state: S, timer: number | null, stateJson?: string];

/**
 * A shard snapshot: every key's state and timer (null for none) as of `lsn`, and the time of the last record applied
 * (`at`).
 */
export interface ShardSnapshot<S> {
  readonly lsn: number;
  readonly at?: number;
  readonly keys: Iterable<SnapshotEntry<S>>;
  /** When known, how many entries `keys` gives, and about how many bytes of JSON their states take. */
  readonly size?: { readonly keys: number; readonly bytes: number };
}

/** The parked keys as they were when a snapshot began, read a few at a time (`ParkedTable.frozenKeys`). */
export interface FrozenKeys {
  next(max: number): string[];
  unread(key: string): boolean;
}

/**
 * A snapshot being written in chunks while records go on being applied: it serialises every key held when it
 * began — the loaded ones, then the parked ones — as it was then. The core calls `beforeChange(key)` before a
 * record changes a key; a key not serialised yet is serialised then, as it still is (at once, since rules may
 * change a state in place), and that entry is the one written.
 */
export class SnapshotCapture {
  /** Of `loaded`, those not serialised yet. */
  private readonly loadedUnread: Set<string>;
  private next = 0;
  /** Keys changed since the snapshot began and not serialised yet: their entry then, or null when they had no state. */
  private readonly before = new Map<string, string | null>();

  /**
   * @param loaded the loaded keys when the snapshot began
   * @param parked the parked keys when it began
   * @param entryJson a key's entry now, `[key, state, timer or null]` as JSON, or null when it has no state
   */
  constructor(
    readonly lsn: number,
    readonly at: number | undefined,
    private readonly loaded: readonly string[],
    private readonly parked: FrozenKeys,
    private readonly entryJson: (key: string) => string | null,
  ) {
    this.loadedUnread = new Set(loaded);
  }

  /** Keeps `key`'s entry as it is now, if the snapshot has still to write it: a record is about to change it. */
  beforeChange(key: string): void {
    if (!this.before.has(key) && (this.loadedUnread.has(key) || this.parked.unread(key)))
      this.before.set(key, this.entryJson(key));
  }

  /** The next (up to) `max` entries, as JSON texts; empty when the snapshot is done. */
  chunk(max: number): string[] {
    const out: string[] = [];
    const entry = (key: string): void => {
      this.loadedUnread.delete(key);
      const before = this.before.get(key);
      if (before !== undefined) {
        this.before.delete(key); // read once: the Map holds only what is still to come
        if (before !== null) out.push(before);
        return;
      }
      out.push(this.entryJson(key)!);
    };
    for (; this.next < this.loaded.length && out.length < max; this.next++) entry(this.loaded[this.next]!);
    if (out.length < max) for (const key of this.parked.next(max - out.length)) entry(key);
    return out;
  }
}
