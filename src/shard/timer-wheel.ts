/**
 * Timers due within a horizon, in buckets of `tickMs`. A timer later than the horizon is not held here:
 * its owner keeps it and hands it over when a sweep finds it within reach. Cancelling is lazy: a key's entry
 * is checked against its current timer when the bucket comes due. The owner's `timerOf` answers for the
 * timers it put in the wheel only: a key whose timer went beyond the horizon has none here until it is added again.
 */
export class TimerWheel {
  private readonly buckets = new Map<number, string[]>();
  /** The first bucket not yet fully handed out. */
  private cursor: number;
  /** Entries held, and how many of them were reported dropped since the last clean-up (an estimate). */
  private entries = 0;
  private stale = 0;

  constructor(
    private readonly tickMs: number,
    readonly horizonMs: number,
    nowMs: number,
  ) {
    this.cursor = Math.floor(nowMs / tickMs);
  }

  /** True when a timer at `atMs` belongs in the wheel now (not beyond the horizon). */
  within(atMs: number, nowMs: number): boolean {
    return atMs - nowMs <= this.horizonMs;
  }

  add(key: string, atMs: number): void {
    const bucket = this.bucketOf(atMs);
    const list = this.buckets.get(bucket);
    if (list) list.push(key);
    else this.buckets.set(bucket, [key]);
    this.entries++;
  }

  /**
   * Says that an entry went stale (its key's timer was cleared or moved, or the key was parked). Once about
   * half the entries are stale, the wheel drops them all (checking each against `timerOf`), so it never
   * holds more than about twice the live timers: the clean-up costs what the reports that led to it did.
   */
  dropped(timerOf: (key: string) => number | undefined): void {
    if (++this.stale <= this.entries / 2 || this.entries < 64) return;
    this.entries = 0;
    for (const [bucket, list] of this.buckets) {
      const live = list.filter((key) => this.live(bucket, timerOf(key)));
      if (live.length === 0) this.buckets.delete(bucket);
      else this.buckets.set(bucket, live);
      this.entries += live.length;
    }
    this.stale = 0;
  }

  /** The bucket a timer at `atMs` goes in now (the cursor's, when it is overdue); NaN, no bucket, for no timer. */
  private bucketOf(atMs: number | undefined): number {
    return Math.max(this.cursor, Math.floor((atMs ?? Number.NaN) / this.tickMs));
  }

  /** True when a key's timer (`atMs`) still puts it in `bucket`. */
  private live(bucket: number, atMs: number | undefined): boolean {
    return this.bucketOf(atMs) === Math.max(this.cursor, bucket);
  }

  /**
   * Hands out up to `max` keys whose timers are due by `nowMs`, oldest bucket first; the rest stay for the
   * next call, so a mass wake runs in bounded chunks. `timerOf(key)` is the key's current timer: an entry
   * whose key no longer has a timer in this bucket was cancelled or moved, and is dropped.
   */
  due(nowMs: number, max: number, timerOf: (key: string) => number | undefined): string[] {
    const out: string[] = [];
    const picked = new Set<string>();
    // The cursor's bucket is always looked at (it holds timers added overdue, even when `nowMs` is earlier
    // than a previous call's), but the cursor never moves past the bucket of `nowMs`.
    const last = Math.floor(nowMs / this.tickMs);
    while (out.length < max) {
      const list = this.buckets.get(this.cursor);
      if (!list) {
        if (this.cursor >= last) break;
        this.cursor++;
        continue;
      }
      const later: string[] = [];
      while (out.length < max) {
        const key = list.pop();
        if (key === undefined) break; // the bucket is emptied
        this.entries--;
        const at = timerOf(key);
        if (this.bucketOf(at) !== this.cursor || picked.has(key)) continue; // (no timer: no bucket)
        if (at! <= nowMs) {
          picked.add(key);
          out.push(key);
        } else later.push(key);
      }
      list.push(...later);
      this.entries += later.length;
      if (list.length > 0) break; // what is left in this bucket is not due yet, or `max` keys were handed out
      this.buckets.delete(this.cursor);
      if (this.cursor >= last) break;
      // Stryker disable next-line UpdateOperator: a step back costs two more turns of the loop, no more: the buckets before the cursor are empty
      this.cursor++;
    }
    return out;
  }

  /**
   * The start of the earliest bucket held, or undefined: at most the earliest timer of a later bucket, but
   * the cursor's bucket may hold timers added overdue, earlier than its start.
   */
  firstBucketMs(): number | undefined {
    let first = Number.POSITIVE_INFINITY;
    for (const b of this.buckets.keys()) first = Math.min(first, b);
    return first === Number.POSITIVE_INFINITY ? undefined : Math.max(first, this.cursor) * this.tickMs;
  }

  /**
   * The earliest live timer in the wheel, or undefined. Entries of the earliest bucket are checked against
   * `timerOf` (dropping stale ones), so the answer is exact, not a bucket's start.
   */
  earliestMs(timerOf: (key: string) => number | undefined): number | undefined {
    while (this.buckets.size > 0) {
      let first = Number.POSITIVE_INFINITY;
      for (const b of this.buckets.keys()) first = Math.min(first, b);
      const list = this.buckets.get(first)!;
      let min = Number.POSITIVE_INFINITY;
      const live = list.filter((key) => {
        const at = timerOf(key);
        if (!this.live(first, at)) return false;
        min = Math.min(min, at!);
        return true;
      });
      this.entries -= list.length - live.length;
      if (live.length > 0) {
        this.buckets.set(first, live);
        return min;
      }
      this.buckets.delete(first);
    }
    return undefined;
  }

  /** Timers held (cancelled ones included until their bucket is reached). */
  size(): number {
    let n = 0;
    for (const list of this.buckets.values()) n += list.length;
    return n;
  }
}
