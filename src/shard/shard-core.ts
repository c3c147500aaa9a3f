import { TIMER, type Rules, type ShardRecord } from './rules.js';
import { Fx, type Queued } from './effects.js';
import { ParkedStates } from './parked-states.js';
import { SnapshotCapture, type ShardSnapshot } from './snapshot-capture.js';
import { LoadedTimers, earlier } from './loaded-timers.js';

export type { ShardSnapshot } from './snapshot-capture.js';

const NONE: ReadonlySet<string> = new Set();

/** Something the core tells its host about, as it happens (for metrics and logs). */
export type ShardEvent =
  | { readonly type: 'applied'; readonly lsn: number; readonly key: string; readonly record: string }
  | { readonly type: 'retired'; readonly key: string };

/** Settings of a {@link ShardCore}. */
export interface ShardCoreOptions {
  /** The wheel's bucket width. @default 10 */
  tickMs?: number;
  /** Timers further out wait outside the wheel until a sweep brings them in. @default 60_000 */
  horizonMs?: number;
  /** Where time starts for the wheel (the host's clock when the core is made). */
  nowMs: number;
  /**
   * Keys kept loaded (their state an object, their timer in the wheel) at most, give or take a quarter: beyond
   * it the least recently applied are parked — their state as bytes and their timer in a table entry, no object per key
   * — and
   * loaded again when a record for them is applied or their timer comes due. @default 10_000
   */
  maxLoadedKeys?: number;
}

/**
 * The pure state of one shard: every key's coordinator state, derived from the shard's records by
 * `apply`, the only transition — called as each record is appended and again for each record replayed
 * after a crash, so live and recovered state cannot differ. Outputs wait in LSN order until `release`
 * says their record is durable. Timers: `due(now)` names the keys whose timer has come, in bounded chunks;
 * the host appends a `timer` record for each and applies it like any other.
 */
export class ShardCore<S, O> {
  /** Loaded keys' states, the least recently applied first. */
  private readonly states = new Map<string, S>();
  /** Loaded keys' timers. */
  private readonly timers: LoadedTimers;
  /** Idle keys: a key is loaded or parked, never both. */
  private readonly parked: ParkedStates<S>;
  private readonly maxLoaded: number;
  private readonly tickMs: number;
  private readonly queue: Queued<O>[] = [];
  private readonly fx = new Fx<O>(this.queue, (mark, key) => this.isMarked(mark, key));
  private lastLsn = 0;
  private lastAt: number | undefined = undefined;
  private readonly listeners: ((event: ShardEvent) => void)[] = [];
  /** A snapshot being written in chunks: the states it must see, as of its LSN, for keys changed since. */
  private capture: SnapshotCapture | undefined;
  /** The rules' tallies summed over every key with state, per group (see `Rules.tallies`, `Rules.tallyGroup`). */
  private readonly sums = new Map<string, number[]>();
  /** Per group of keys, per mark (see `Rules.marks`): the keys that carry it, in the order they took it. */
  private readonly markSets = new Map<string, Set<string>[]>();

  constructor(
    private readonly rules: Rules<S, O>,
    options: ShardCoreOptions,
  ) {
    this.parked = new ParkedStates<S>(rules.codec);
    this.tickMs = options.tickMs ?? 10;
    this.timers = new LoadedTimers(this.tickMs, options.horizonMs ?? 60_000, options.nowMs);
    this.maxLoaded = options.maxLoadedKeys ?? 10_000;
    if (!(Number.isInteger(this.maxLoaded) && this.maxLoaded >= 1))
      throw new RangeError(`ShardCore: maxLoadedKeys must be an integer from 1 up, got ${this.maxLoaded}`);
  }

  /**
   * The latest time of the records applied (or of the snapshot imported): the shard's time, which a new
   * record's must not go back before. Undefined before the first.
   */
  get time(): number | undefined {
    return this.lastAt;
  }

  /**
   * The one transition. `lsn` must exceed the last applied; the record's `at` is its time. Returns what
   * the rules replied to the record's appender, if anything.
   */
  apply(lsn: number, record: ShardRecord): unknown {
    if (!(lsn > this.lastLsn))
      throw new RangeError(`ShardCore.apply: LSN ${lsn} after ${this.lastLsn}; records apply once, in order`);
    this.lastLsn = lsn;
    if (this.lastAt === undefined || record.at > this.lastAt) this.lastAt = record.at;
    const key = record.key;
    this.capture?.beforeChange(key);
    this.load(key, record.at);
    // One effects object for every apply (no closures per record): reset here, read back below.
    const fx = this.fx;
    fx.lsn = lsn;
    fx.replied = undefined;
    // A timer record clears the timer it fired; the rules may set the next one.
    fx.changed = record.type === TIMER;
    fx.at = fx.changed ? undefined : this.timers.get(key);
    const prior = this.states.get(key);
    const sums = this.sumsOf(key);
    if (prior !== undefined) this.tally(sums, prior, -1); // before apply, which may change it in place
    const next = this.rules.apply(prior ?? this.rules.initial(key), record, fx);
    const timer = fx.at;
    const reply = fx.replied;
    if (fx.changed) this.timers.set(key, timer, record.at);
    if (this.listeners.length > 0) this.emit({ type: 'applied', lsn, key, record: record.type });
    const had = this.states.delete(key); // and set again below: the most recently applied go last
    if (this.rules.retired(next) && timer === undefined) {
      this.mark(key, undefined);
      if (had) this.emit({ type: 'retired', key });
    } else {
      this.states.set(key, next);
      this.tally(sums, next, 1);
      this.mark(key, next);
      this.parkIdle();
    }
    return reply;
  }

  /**
   * The rules' tallies over every key with state, in their order (see `Rules.tallies`), per group of keys
   * (`Rules.tallyGroup`; `''` without it). A group once seen stays, at zeros when its keys are gone.
   */
  get tallies(): ReadonlyMap<string, readonly number[]> {
    return this.sums;
  }

  /**
   * The keys of group `group` (see `Rules.tallyGroup`) that carry mark `mark` (see `Rules.marks`), loaded or
   * parked, in the order they took it (a key that lost the mark and took it again counts from the second
   * time). Empty when none does. Read it before the next `apply`, which may change it.
   */
  marked(group: string, mark: number): ReadonlySet<string> {
    return this.markSets.get(group)?.[mark] ?? NONE;
  }

  /** Whether `key` carries mark `mark` (see `Effects.marked`). */
  private isMarked(mark: number, key: string): boolean {
    const sets = this.markSets.get(this.rules.tallyGroup?.(key) ?? '');
    return sets?.[mark]?.has(key) === true;
  }

  /** Puts `key` in or out of each mark's set by its state now (`undefined`: it has none). */
  private mark(key: string, state: S | undefined): void {
    const marks = this.rules.marks;
    if (marks === undefined) return;
    const group = this.rules.tallyGroup?.(key) ?? '';
    let sets = this.markSets.get(group);
    if (sets === undefined) {
      if (state === undefined) return;
      this.markSets.set(group, (sets = marks.map(() => new Set<string>())));
    }
    for (let i = 0; i < marks.length; i++)
      if (state !== undefined && marks[i]!(state)) sets[i]!.add(key);
      else sets[i]!.delete(key);
  }

  /** The sums of the key's group (made at its first key), or undefined when the rules tally nothing. */
  private sumsOf(key: string): number[] | undefined {
    const tallies = this.rules.tallies;
    if (tallies === undefined) return undefined;
    const group = this.rules.tallyGroup?.(key) ?? '';
    let sums = this.sums.get(group);
    if (sums === undefined) this.sums.set(group, (sums = tallies.map(() => 0)));
    return sums;
  }

  /** Adds a state's tallies to its group's `sums` (`sign` 1), or takes them away (-1). */
  private tally(sums: number[] | undefined, state: S, sign: number): void {
    const tallies = this.rules.tallies;
    if (sums === undefined || tallies === undefined) return;
    for (let i = 0; i < tallies.length; i++) sums[i]! += sign * tallies[i]!(state);
  }

  /** Outputs whose records are durable (LSN <= `durableLsn`), in LSN order; each is handed out once. */
  release(durableLsn: number): O[] {
    let n = 0;
    while (n < this.queue.length && this.queue[n]!.lsn <= durableLsn) n++;
    return this.queue.splice(0, n).map((q) => q.value);
  }

  /**
   * Starts a snapshot of the state as of the last applied record, to be serialised a chunk at a time while
   * records go on being applied (a key changed meanwhile is seen as it was). Only one at a time.
   */
  beginSnapshot(): { readonly lsn: number; readonly at: number | undefined } {
    if (this.capture) throw new Error('ShardCore.beginSnapshot: a snapshot is under way');
    const entryJson = (key: string): string | null => this.entryJson(key);
    this.capture = new SnapshotCapture(
      this.lastLsn,
      this.lastAt,
      [...this.states.keys()],
      this.parked.frozenKeys(),
      entryJson,
    );
    return this.capture;
  }

  /** The next (up to) `max` entries of the snapshot under way, as JSON texts; empty when it is done. */
  snapshotChunk(max: number): string[] {
    if (!this.capture) throw new Error('ShardCore.snapshotChunk: no snapshot under way');
    return this.capture.chunk(max);
  }

  /** A key's snapshot entry, `[key, state, timer or null]` as JSON, or null when it has no state. */
  private entryJson(key: string): string | null {
    const loaded = this.states.get(key);
    if (loaded !== undefined)
      return JSON.stringify([key, this.encode(this.rebase(loaded)), this.timers.get(key) ?? null]);
    return this.parked.entryJson(key) ?? null; // parked: its JSON as it is
  }

  /** A state as a snapshot writes it (by the rules' codec). */
  private encode(state: S): unknown {
    return this.rules.codec ? this.rules.codec.encode(state) : state;
  }

  /** What a snapshot keeps of a loaded state (a parked one is kept as it was parked). */
  private rebase(state: S): S {
    return this.rules.rebase ? this.rules.rebase(state) : state;
  }

  endSnapshot(): void {
    this.capture = undefined;
  }

  /**
   * Starts from a snapshot instead of from nothing: before any record is applied. `each`, if given, sees each
   * key's state as it is imported. An entry's state text, when it has one, is what a key parked here keeps.
   */
  importState(snapshot: ShardSnapshot<S>, nowMs: number, each?: (key: string, state: S) => void): void {
    if (this.lastLsn !== 0) throw new RangeError('ShardCore.importState: the core has applied records already');
    this.lastLsn = snapshot.lsn;
    this.lastAt = snapshot.at;
    const codec = this.rules.codec;
    const size = snapshot.size;
    const parking = size === undefined ? 0 : size.keys - Math.max(0, this.maxLoaded - this.states.size);
    if (parking > 0) this.parked.reserve(parking, Math.ceil((size!.bytes / size!.keys) * parking));
    for (const [key, json, timer, text] of snapshot.keys) {
      const state = codec ? codec.decode(json) : json; // decoded even to be parked: what does not read is refused now
      each?.(key, state);
      this.tally(this.sumsOf(key), state, 1);
      this.mark(key, state);
      if (this.states.size < this.maxLoaded) {
        this.states.set(key, state);
        if (timer !== null) this.timers.set(key, timer, nowMs);
      } else this.parked.parkEncoded(key, json, timer ?? undefined, text); // as the snapshot holds it
    }
  }

  /**
   * Up to `max` keys whose timer is due at `nowMs`, oldest first (to a bucket of the wheel): the host
   * appends a `timer` record for each. Parked keys named are loaded (so at most `max` are decoded a call).
   */
  due(nowMs: number, max: number): string[] {
    this.timers.promote(nowMs);
    const out: string[] = [];
    const named = new Set<string>();
    while (out.length < max) {
      const parked = this.parked.size > 0 ? this.parked.earliest() : undefined;
      const wheelFrom = this.timers.firstDueMs(nowMs); // a lower bound of the wheel's timers
      let got: string[] = [];
      if (wheelFrom !== undefined && wheelFrom <= nowMs && !(parked! < wheelFrom)) {
        // The wheel's timers up to the earliest parked one (all due ones when none is parked).
        got = this.timers.due(Math.min(nowMs, parked ?? Number.POSITIVE_INFINITY), max - out.length);
      }
      if (got.length === 0) {
        if (!(parked! <= nowMs)) break;
        // Parked timers a bucket at a time: the wheel has none earlier.
        got = this.parked.due(Math.min(nowMs, parked! + this.tickMs - 1), max - out.length);
        for (const key of got) {
          const { state, timer } = this.parked.unpark(key)!;
          this.states.set(key, state);
          this.timers.setDue(key, timer!); // handed out now, so not in the wheel
        }
      }
      if (got.length === 0) break;
      for (const key of got)
        if (!named.has(key)) {
          named.add(key);
          out.push(key);
        }
    }
    return out;
  }

  /** The key's timer, if one is set. */
  timerOf(key: string): number | undefined {
    return this.timers.get(key) ?? this.parked.timerOf(key);
  }

  /**
   * When the host should next call `due`: the earliest bucket of the wheel, or — while timers wait beyond
   * the horizon — half a horizon from `nowMs` at the latest, so that a sweep brings them in. Undefined when
   * no timer is set. Never more than the horizon away, so a Node timer can always hold it.
   */
  nextDueMs(nowMs: number): number | undefined {
    // Called after every append: no arrays, no closures.
    let next = this.timers.nextDueMs(nowMs);
    const parked = this.parked.size > 0 ? this.parked.earliest() : undefined;
    if (parked !== undefined) next = earlier(next, Math.min(parked, nowMs + this.timers.horizonMs));
    return next;
  }

  /**
   * The key's state (a parked key's decoded afresh), or undefined when it has none. Read it before the next `apply`,
   * which may change it.
   */
  state(key: string): S | undefined {
    return this.states.get(key) ?? this.parked.state(key);
  }

  /** How many keys have state, loaded or parked. */
  get keyCount(): number {
    return this.states.size + this.parked.size;
  }

  /** How many keys are parked. */
  get parkedCount(): number {
    return this.parked.size;
  }

  /** Bytes held by the parked keys' table and state arena. */
  parkedBytes(): number {
    return this.parked.bytes();
  }

  /** Keys with state: the loaded ones, then the parked ones. Nothing may be applied while this runs. */
  *keys(): IterableIterator<string> {
    yield* this.states.keys();
    yield* this.parked.keys();
  }

  get appliedLsn(): number {
    return this.lastLsn;
  }

  /** Outputs waiting for their records to become durable. */
  get waiting(): number {
    return this.queue.length;
  }

  onEvent(listener: (event: ShardEvent) => void): void {
    this.listeners.push(listener);
  }

  /** Loads a parked key for a record: its state into `states`, its timer among the loaded ones. */
  private load(key: string, nowMs: number): void {
    if (this.parked.size === 0 || this.states.has(key)) return;
    const entry = this.parked.unpark(key);
    if (!entry) return;
    this.states.set(key, entry.state);
    if (entry.timer !== undefined) this.timers.set(key, entry.timer, nowMs);
  }

  /**
   * Once the loaded keys pass `maxLoaded` by a quarter, parks the least recently applied down to it: in one
   * pass, since a Map walked from its front after deletes there skips their holes each time.
   */
  private parkIdle(): void {
    if (this.states.size <= this.maxLoaded + (this.maxLoaded >> 2)) return;
    for (const [key, state] of this.states) {
      if (this.states.size <= this.maxLoaded) break;
      this.states.delete(key);
      this.parked.park(key, state, this.timers.remove(key));
    }
  }

  private emit(event: ShardEvent): void {
    for (const l of this.listeners) l(event);
  }
}
