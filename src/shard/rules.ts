/**
 * The shard's rules, at the top as h11 keeps its own: everything that affects a transition is a record,
 * and `ShardCore.apply` is the only transition. A record carries its time (`at`, stamped by the host when
 * it was appended); the core reads no clock, does no I/O and never awaits, so replaying the log rebuilds
 * exactly the state that live appends built.
 */

/** One record of a shard log: something that happened to one key. */
export interface ShardRecord {
  readonly key: string;
  /** Milliseconds since the epoch, stamped by the host when the record was made. */
  readonly at: number;
  /** What happened, in the rules' own vocabulary; `timer` is the core's: the key's timer fired. */
  readonly type: string;
  readonly data?: unknown;
}

/** What a transition may do besides returning the next state. */
export interface Effects<O> {
  /** Queue an output (a run to dispatch, a receipt to answer): it leaves once the record is durable. */
  output(value: O): void;
  /** Set the key's one timer to `atMs` (replacing any), or clear it with `undefined`. */
  timer(atMs: number | undefined): void;
  /**
   * Answer the appender of this record (a receipt): the host hands it back once the record is durable.
   * Not an output: a replayed record's reply goes nowhere.
   */
  reply(value: unknown): void;
  /**
   * Whether the key `key` (another key of the shard, or this one as it was before this record) carries mark
   * `mark` (see `Rules.marks`): a read of the shard's state as the records before this one left it, so a
   * transition may depend on another key's state (a subscriber paused in the shard) and stay pure.
   */
  marked(mark: number, key: string): boolean;
}

/** A coordinator's semantics (pace's debounce, batch, …): pure functions of state and record. */
export interface Rules<S, O> {
  /** The state of a key with no history. */
  initial(key: string): S;
  /**
   * The transition. Must not read a clock or do I/O: time is `record.at`. It may change `state` in place
   * and return it: the core keeps no other reference to a state once it has handed it to `apply`.
   */
  apply(state: S, record: ShardRecord, effects: Effects<O>): S;
  /** True when the key holds nothing worth keeping (no timer is set): its state is dropped. */
  retired(state: S): boolean;
  /** What a snapshot keeps of a state (compaction): all of it unless the rules say. */
  rebase?(state: S): S;
  /**
   * How a state is written as JSON (in a snapshot, or while its key is parked) and read back: the state as
   * it is unless the rules give their own codec.
   */
  codec?: StateCodec<S>;
  /**
   * Numbers summed over every key's state, loaded or parked (a pace rule's open windows, say), which the
   * core keeps up to date as it applies records, so that metrics read them without walking the keys. Each
   * is a pure function of a state; a key without state counts 0.
   */
  tallies?: readonly ((state: S) => number)[];
  /**
   * The group a key's tallies count under (pace: the key's subscriber), so that metrics read them per
   * group; every key counts under `''` without it. Pure, and cheap: it is asked once per record.
   */
  tallyGroup?(key: string): string;
  /**
   * Marks: per mark, a pure function of a state that says whether the key carries it (a pace rule's open
   * window, runs waiting, runs out). The core keeps, per group of keys (`tallyGroup`) and mark, the set of keys
   * that carry it, loaded or parked, up to date as it applies records: the keys to list for an inspection,
   * found without decoding any other key's state. A key without state carries none.
   */
  marks?: readonly ((state: S) => boolean)[];
}

/** A state to and from the JSON value a snapshot holds: `decode(encode(s))` is a state equal to `s`. */
export interface StateCodec<S> {
  encode(state: S): unknown;
  /** A state from a JSON value `encode` gave, or an earlier version of it wrote; throws on one it cannot read. */
  decode(json: unknown): S;
}

/** The record type the core appends when a key's timer comes due. */
export const TIMER = 'timer';
