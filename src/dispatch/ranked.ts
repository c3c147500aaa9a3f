/**
 * The scheduler of paced subscribers' runs: among the runs waiting for a free worker, the higher `order`
 * goes first; among equal order, either the oldest (FIFO) or — with `turns` — the keys take turns, one run
 * per key per turn, so that a key with 10,000 waiting runs holds another key's single run back by one run
 * at most. Under `byKey` a key's runs also go one at a time, the next when the last is done.
 *
 * Two levels of binary heap: each key's waiting runs by (order desc, arrival), and the keys that may run
 * by (their first run's order desc, their turn). A key's turn is the moment it joined the rotation (with
 * turns) or its first run's arrival (without). Pushing and taking a run cost O(log keys + log runs of its key).
 */
import type { DispatchStrategy, Keyed, Scheduler } from './strategy.js';

/** A job with an order: higher goes first (0 when left out). */
export interface Ranked extends Keyed {
  readonly order?: number;
}

interface Entry<J> {
  readonly job: J;
  readonly order: number;
  readonly seq: number;
}

/** A key's waiting runs, and its place among the keys. */
interface Group<J> {
  readonly key: string | undefined;
  readonly jobs: Heap<Entry<J>>;
  /** The order and turn it is ranked by among the keys (its first run's order). */
  order: number;
  turn: number;
  /** Its index in the keys' heap, -1 when not in it. */
  pos: number;
  /** Under byKey: a run of the key is running. */
  busy: boolean;
}

/** A binary heap that tells its items their index (for re-ranking one in place). */
class Heap<T> {
  readonly items: T[] = [];
  constructor(
    private readonly before: (a: T, b: T) => boolean,
    private readonly moved?: (item: T, pos: number) => void,
  ) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    this.items.push(item);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      this.down(0);
    }
    return top;
  }

  // The sifts move a hole rather than swapping, each item written once where it lands: a third fewer writes
  // (and `place` callbacks) than swaps, which bench/pace-order.ts measures (swapping recursively cost ~35%).

  /** The item at `pos` now ranks higher than it did: it moves up past the parents it ranks before. */
  up(pos: number): void {
    const items = this.items;
    const item = items[pos]!;
    while (pos > 0) {
      const parent = (pos - 1) >> 1;
      if (!this.before(item, items[parent]!)) break;
      this.place(items[parent]!, pos);
      pos = parent;
    }
    this.place(item, pos);
  }

  /** The item at `pos` moves down past the higher-ranked children that rank before it. */
  private down(pos: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[pos]!;
    for (;;) {
      const l = 2 * pos + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && this.before(items[r]!, items[l]!) ? r : l;
      if (!this.before(items[child]!, item)) break;
      this.place(items[child]!, pos);
      pos = child;
    }
    this.place(item, pos);
  }

  private place(item: T, pos: number): void {
    this.items[pos] = item;
    this.moved?.(item, pos);
  }
}

const entryBefore = <J>(a: Entry<J>, b: Entry<J>): boolean =>
  a.order > b.order || (a.order === b.order && a.seq < b.seq);
const groupBefore = <J>(a: Group<J>, b: Group<J>): boolean =>
  a.order > b.order || (a.order === b.order && a.turn < b.turn);

/** Settings of a {@link RankedScheduler}. */
export interface RankedOptions {
  /** A key's runs go one at a time. */
  readonly byKey: boolean;
  /** Among equal order, keys take turns (otherwise the oldest run goes first). */
  readonly turns: boolean;
}

export class RankedScheduler<J extends Ranked> implements Scheduler<J> {
  /** The keys with runs waiting or (under byKey) one running; runs without a key under undefined, never held back. */
  private readonly groups = new Map<string | undefined, Group<J>>();
  private readonly ready = new Heap<Group<J>>(groupBefore, (g, pos) => (g.pos = pos));
  private seq = 0;
  private turns = 0;

  constructor(private readonly options: RankedOptions) {}

  /** Runs waiting (not yet taken by a worker). */
  get waiting(): number {
    let n = 0;
    for (const g of this.groups.values()) n += g.jobs.size;
    return n;
  }

  push(job: J): boolean {
    let g = this.groups.get(job.key);
    if (g === undefined) this.groups.set(job.key, (g = this.group(job.key)));
    const entry: Entry<J> = { job, order: job.order ?? 0, seq: this.seq++ };
    g.jobs.push(entry);
    if (g.busy) return false;
    if (g.pos < 0) this.enter(g);
    else if (g.jobs.peek() === entry) {
      // It ranks its key higher than before: the key moves up, keeping its turn.
      g.order = entry.order;
      if (!this.options.turns) g.turn = entry.seq;
      this.ready.up(g.pos);
    }
    return true;
  }

  next(): J | undefined {
    const g = this.ready.pop();
    if (g === undefined) return undefined;
    // Stryker disable next-line UnaryOperator: pos is read only by push() of a key that is not busy, and before that a key taken from is busy (byKey) or settled at once, which puts it back in the heap (a new pos) or forgets it
    g.pos = -1;
    const job = g.jobs.pop()!.job;
    if (this.options.byKey && g.key !== undefined) g.busy = true;
    else this.settle(g);
    return job;
  }

  done(job: J): void {
    // A fast path, measured by bench/pace-order.ts (the lookup below cost about a third of a pool's
    // scheduling): without byKey no key is ever busy, so nothing waits. (Its `false` mutant is equivalent.)
    if (!this.options.byKey) return;
    const g = this.groups.get(job.key);
    if (g === undefined || !g.busy) return; // nothing waits behind it (not byKey, keyless, or not taken)
    g.busy = false;
    this.settle(g);
  }

  private group(key: string | undefined): Group<J> {
    return { key, jobs: new Heap<Entry<J>>(entryBefore), order: 0, turn: 0, pos: -1, busy: false };
  }

  /** A key that was taken from: back into the rotation (at the end of its turn) if it has runs, or forgotten. */
  private settle(g: Group<J>): void {
    if (g.jobs.size > 0) this.enter(g);
    else this.groups.delete(g.key);
  }

  private enter(g: Group<J>): void {
    const head = g.jobs.peek()!;
    g.order = head.order;
    g.turn = this.options.turns ? this.turns++ : head.seq;
    this.ready.push(g);
  }
}

/**
 * For paced subscribers' runs: n workers (as a pool, or as lanes by key with `byKey`) drawing the waiting
 * run of highest `order` first; among equal order the oldest, or with `turns` the keys in turn.
 */
export function ranked(n: number, options: RankedOptions): DispatchStrategy {
  return {
    name: options.byKey ? 'lanes' : 'pool',
    workers: n,
    scheduler: <J extends Keyed>() => new RankedScheduler<J>(options),
  };
}
