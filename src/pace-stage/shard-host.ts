import { SluiceError } from '../core/errors.js';
import { utf8 } from '../core/message.js';
import type { Alongside, Clock, ShardLog, Timer } from '../core/ports.js';
import { MAX_RECORD_BYTES } from '../core/records.js';
import { TIMER, type Rules, type ShardRecord } from '../shard/rules.js';
import { ShardCore, type ShardSnapshot } from '../shard/shard-core.js';
import { readSnapshotText } from '../shard/snapshot-text.js';
import { ShardSnapshots } from './shard-snapshots.js';
import { decodeRecord, encodeRecord } from './journal-record.js';

/** A record as it is handed in: stamped with the host's time unless it has one. */
type Unstamped = Omit<ShardRecord, 'at'> & { at?: number };
/** Told of the rules' reply to a record as it is applied. */
type OnReply = (reply: unknown) => void;

/** Settings of a {@link ShardHost}. */
export interface ShardHostOptions<S, O> {
  readonly log: ShardLog;
  readonly rules: Rules<S, O>;
  readonly clock: Clock;
  /** Receives each output once its record is durable, in LSN order. */
  readonly onOutput: (output: O) => void;
  /**
   * After recovery, what a key's state still owes (a run started and not finished): replayed records'
   * outputs are not handed out again, since they may have left before the crash; this says what must. A
   * function of the state alone: it is asked of a snapshot's states as they are imported, and again at
   * `serve` of those that owed and of the keys replayed since.
   */
  readonly resume?: (key: string, state: S) => O[];
  /**
   * Timers fired per turn of the event loop at most (a wake starts at a sixteenth and doubles), so a mass wake starts
   * its first runs before loading the rest. @default 1_000
   */
  readonly chunk?: number;
  readonly tickMs?: number;
  readonly horizonMs?: number;
  /** Keys kept loaded at most; idle ones beyond it are parked (see `ShardCoreOptions`). @default 10_000 */
  readonly maxLoadedKeys?: number;
  /**
   * Take a snapshot (whole-shard state, JSON) after this many records (and at least twice as many records
   * as keys held, and at least as many bytes of records as the last snapshot took), at the next moment when
   * everything applied is durable and handed out; the log then deletes the segments it made dead. @default 10_000
   */
  readonly snapshotEvery?: number;
  /** Told when a background snapshot failed (the log goes on; the next snapshot tries again). */
  readonly onSnapshotError?: (error: unknown) => void;
  /** Called once `serve()` handed out what recovered keys owed and armed the timers. */
  readonly onServe?: () => void;
  /** Called after each append became durable (or failed), its outputs handed out. */
  readonly onSettled?: () => void;
  /**
   * Told of each record applied live, before it is durable, with what hands out outputs up to an LSN: none by
   * default, outputs waiting for their record to be durable (the simulator's `releaseEarly` hands them out).
   */
  readonly onApplied?: (lsn: number, handOut: (upTo: number) => void) => void;
  /** How far timers may fire (see `InputGate`): up to `limit(now)`; told of a change, the host arms again. */
  readonly gate?: { limit(now: number): number; onChange(listener: () => void): void; close(): void };
}

/** A host is made `new`, `recover()` replays its log, `serve()` starts it, `close()` ends it. */
export type ShardHostPhase = 'new' | 'recovering' | 'recovered' | 'serving' | 'closed';

/** A record made durable: its LSN, and the rules' reply to it (a receipt). */
export type Submitted = { readonly lsn: number; readonly reply: unknown };

/**
 * The I/O around a pure {@link ShardCore}: appends each record to the shard's log and applies it at once
 * (the log gives its LSN), hands out outputs as the log makes their records durable, fires due timers as
 * `timer` records in bounded chunks, and on open rebuilds the core by replaying the log.
 */
export class ShardHost<S, O> {
  readonly core: ShardCore<S, O>;
  private timer: Timer | undefined;
  /** Records are taken, outputs handed out and timers fired only while serving: after replay, until close. */
  private stage: ShardHostPhase = 'new';
  private armedAt = Number.POSITIVE_INFINITY;
  private failed: SluiceError | undefined;
  private firing = false;
  /** Set by `stopTimers`: no timer fires again on this host. */
  private timersStopped = false;
  /** When the core is snapshotted, and the snapshot under way. */
  private readonly snapshots: ShardSnapshots<S, O>;
  private pendingAppends = 0;
  private drainWaiters: (() => void)[] = [];
  /** Timers fired by the last turn of a wake (0 when none is under way). */
  private burst = 0;
  /**
   * From `recover` to `serve`: the keys that may still owe something (see `serve`). Only they are asked: the
   * keys whose imported state owed, and those replayed; any other key's state is the one imported.
   */
  private owing: Set<string> | undefined;

  constructor(private readonly options: ShardHostOptions<S, O>) {
    this.core = new ShardCore(options.rules, {
      nowMs: options.clock.now(),
      tickMs: options.tickMs,
      horizonMs: options.horizonMs,
      maxLoadedKeys: options.maxLoadedKeys,
    });
    this.snapshots = new ShardSnapshots(this.core, options.log, options.snapshotEvery);
    options.gate?.onChange(() => this.arm());
  }

  /** The shard whose log this host runs (`ShardLog.shard`). */
  get shard(): number {
    return this.options.log.shard;
  }

  /** Where the host is: records are taken only while it is `serving`. */
  get phase(): ShardHostPhase {
    return this.stage;
  }

  /** Recovers (`recover`), then serves (`serve`): for a host on its own. */
  async open(): Promise<void> {
    await this.recover();
    this.serve();
  }

  /**
   * Loads the snapshot and replays the log after it, handing nothing out: from then on the host takes
   * records. Hosts of one store recover all before any serves, so that no output (a run that may finish at
   * once and journal its end in another shard) leaves while a shard has not replayed.
   */
  async recover(): Promise<void> {
    if (this.stage !== 'new')
      throw new SluiceError(
        'APP_STATE',
        `ShardHost: shard ${this.options.log.shard} recovers once, and it is ${this.stage}`,
      );
    this.stage = 'recovering';
    const owing = new Set<string>();
    await this.importSnapshot(owing);
    await this.options.log.replay(this.core.appliedLsn + 1, (lsn, bytes) => {
      const record = decodeRecord(bytes);
      owing.add(record.key);
      this.core.apply(lsn, record);
    });
    this.owing = owing;
    this.core.release(this.core.appliedLsn); // these left (or not) before the crash: `resume` decides
    if (this.stage === 'recovering') this.stage = 'recovered'; // not if closed meanwhile
  }

  /** Imports the log's snapshot, if it has one, noting in `owing` the keys whose state owes something. */
  private async importSnapshot(owing: Set<string>): Promise<void> {
    const snapshot = await this.options.log.readSnapshot();
    if (!snapshot) return;
    const { lsn, at, keys, size } = readSnapshotText(utf8(snapshot.state)) as ShardSnapshot<S>;
    if (lsn !== snapshot.lsn)
      throw new SluiceError('STORE_CORRUPT', `snapshot says LSN ${lsn}, its file ${snapshot.lsn}`);
    const resume = this.options.resume;
    const each = resume && ((key: string, state: S) => void (resume(key, state).length > 0 && owing.add(key)));
    this.core.importState(
      at === undefined ? { lsn, keys, size } : { lsn, at, keys, size },
      this.options.clock.now(),
      each,
    );
    this.snapshots.lsn = lsn;
  }

  /**
   * Hands out what recovered keys still owe (`resume`) and arms the timers. Only the keys noted by `recover`
   * are asked (a parked key's state is decoded to be asked): what `resume` says depends on the state alone.
   */
  serve(): void {
    if (this.stage !== 'recovered')
      throw new SluiceError(
        'APP_STATE',
        `ShardHost: shard ${this.options.log.shard} serves once, after recover(), and it is ${this.stage}`,
      );
    this.stage = 'serving';
    const owing = this.owing ?? [];
    this.owing = undefined;
    if (this.options.resume)
      for (const key of owing) {
        const state = this.core.state(key);
        if (state !== undefined) for (const o of this.options.resume(key, state)) this.options.onOutput(o);
      }
    this.arm();
    this.options.onServe?.();
  }

  /**
   * The time a record made now is stamped with: the clock's, but never before the last record's. A clock
   * can read earlier than what the log already holds — a process restarted on a clock behind the last
   * one's, a clock stepped back — and the rules compare a record's time with times in the state (a rate's
   * run starts, a window's end), so time in a shard's log never goes back.
   */
  now(): number {
    const now = this.options.clock.now();
    const last = this.core.time;
    return last === undefined || now > last ? now : last;
  }

  /**
   * Appends a record (stamped with `now()` unless it has a time; never one before the last record's) and
   * applies it. Resolves with its LSN once it is durable, after its outputs were handed out.
   */
  async append(record: Unstamped): Promise<number> {
    return (await this.submit(record)).lsn;
  }

  /**
   * Like `append`, and resolves with the rules' reply to the record too (a receipt), once it is durable;
   * `onReply` (which must not throw) has it as the record is applied, before any output it makes leaves.
   * Throws `SEND_INVALID` at once for a record over `MAX_RECORD_BYTES` (64 MiB) encoded: no store takes it.
   * `alongside` goes to the log's append (a store that publishes puts its messages in the record's commit).
   * `encode` makes the stamped record's bytes where {@link encodeRecord} would: it must give bytes that
   * decode to the record (a delivery's payload is journaled as it came).
   */
  submit(
    record: Unstamped,
    onReply?: OnReply,
    alongside?: Alongside,
    encode: (stamped: ShardRecord) => Buffer = encodeRecord,
  ): Promise<Submitted> {
    if (this.failed !== undefined) return Promise.reject(this.failed);
    // Before replay, a record would take an LSN that a journaled record holds; after close, go to a closed log.
    if (this.stage !== 'serving')
      return Promise.reject(
        new SluiceError(
          'APP_STATE',
          `ShardHost: shard ${this.options.log.shard} takes records while it serves (after recover() and serve(), until close()), and it is ${this.stage}`,
        ),
      );
    const last = this.core.time;
    const at = record.at === undefined ? this.now() : last === undefined || record.at > last ? record.at : last;
    // A record that came stamped with that time is the stamped record (the intake's: one object less a delivery).
    const { key, type, data } = record;
    const stamped: ShardRecord =
      record.at === at ? (record as ShardRecord) : data === undefined ? { key, at, type } : { key, at, type, data };
    // Encoded here, before anything happens: a record that is not JSON, or too long for any store, throws
    // (synchronously) and leaves no trace.
    let bytes: Buffer;
    try {
      bytes = encode(stamped);
    } catch (error) {
      if (error instanceof RangeError)
        throw new SluiceError(
          'SEND_INVALID',
          `shard log: a record may take at most ${MAX_RECORD_BYTES} bytes, got one too long to encode (${error.message})`,
          { cause: error },
        );
      throw error;
    }
    if (bytes.length > MAX_RECORD_BYTES)
      throw new SluiceError(
        'SEND_INVALID',
        `shard log: a record may take at most ${MAX_RECORD_BYTES} bytes, got ${bytes.length}`,
      );
    return this.commit(stamped, bytes, onReply, alongside);
  }

  private commit(record: ShardRecord, data: Buffer, told?: OnReply, alongside?: Alongside): Promise<Submitted> {
    const log = this.options.log;
    let durable: Promise<number>;
    try {
      durable = log.append(data, alongside);
    } catch (error) {
      return Promise.reject(error);
    }
    this.snapshots.appendedBytes += data.length;
    this.pendingAppends++;
    const reply = this.core.apply(log.assignedLsn(), record);
    told?.(reply);
    this.options.onApplied?.(log.assignedLsn(), (upTo) => {
      for (const o of this.core.release(upTo)) this.options.onOutput(o);
    });
    this.arm();
    // A reaction, not an `await`: every delivery of a paced subscriber comes this way.
    return durable.then((lsn) => this.durable(lsn, reply), this.notDurable);
  }

  /** An append became durable: what it (and those before it) let out leaves. */
  private durable(lsn: number, reply: unknown): Submitted {
    try {
      for (const o of this.core.release(this.options.log.durableLsn())) this.options.onOutput(o);
      if (this.stage !== 'closed' && this.snapshots.due()) this.snapshots.start(this.options.onSnapshotError);
    } catch (error) {
      return this.notDurable(error);
    }
    this.settled();
    return { lsn, reply };
  }

  /** An append failed: applied but not durable, live state is ahead of the log. Only a restart (replay) is safe now. */
  private readonly notDurable = (error: unknown): never => {
    this.failed ??= new SluiceError('STORE_CORRUPT', 'shard log failed; restart to recover', { cause: error });
    this.settled();
    throw this.failed;
  };

  /** An append settled, durable or failed. */
  private settled(): void {
    this.pendingAppends--;
    this.options.onSettled?.();
    if (this.pendingAppends === 0 && this.drainWaiters.length > 0) for (const w of this.drainWaiters.splice(0)) w();
  }

  /** Records appended (by `append` or by a firing timer) and not yet durable. */
  get pending(): number {
    return this.pendingAppends;
  }

  /** Resolves once no append is pending (at once when none is): each has become durable or failed. */
  drained(): Promise<void> {
    if (this.pendingAppends === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /**
   * Writes a snapshot of the whole shard if everything applied is durable and handed out (returns false
   * otherwise, or while one is being written); the log then deletes the segments it covers.
   */
  snapshot(): Promise<boolean> {
    return this.snapshots.take();
  }

  /**
   * Stops firing timers, and takes records still (a run's end): the shard is being handed to another owner,
   * who fires them after its restore. `close` follows.
   */
  stopTimers(): void {
    this.timersStopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
  }

  /** Stops firing timers and taking snapshots; resolves once a snapshot under way is written. */
  async close(): Promise<void> {
    this.stage = 'closed';
    this.timer?.cancel();
    this.options.gate?.close();
    await this.snapshots.settled();
  }

  private limit(now: number): number {
    return this.options.gate?.limit(now) ?? now;
  }

  /** Keeps one clock timer at the core's next due time. */
  private arm(): void {
    if (this.stage !== 'serving' || this.firing || this.timersStopped) return;
    const now = this.options.clock.now();
    const next = this.core.nextDueMs(now);
    // Due, and held by the gate: armed again as it opens, or as a record moves its limit.
    if (next === undefined || next >= this.armedAt || (next <= now && next > this.limit(now))) return;
    this.timer?.cancel();
    this.armedAt = next;
    this.timer = this.options.clock.setTimer(Math.max(0, next - now), () => {
      this.armedAt = Number.POSITIVE_INFINITY;
      this.timer = undefined;
      this.fire();
    });
  }

  /**
   * Fires due timers, a chunk per turn of the event loop. A wake starts with a sixteenth of a chunk and
   * doubles each turn up to `chunk`, so the first outputs leave (their records durable) before a whole
   * chunk has been loaded and appended.
   */
  private fire(): void {
    if (this.stage !== 'serving' || this.failed !== undefined || this.timersStopped) return;
    const now = this.options.clock.now();
    const max = this.options.chunk ?? 1_000;
    const chunk = (this.burst = Math.min(max, this.burst > 0 ? this.burst * 2 : Math.ceil(max / 16)));
    const keys = this.core.due(this.limit(now), chunk);
    this.firing = true; // the appends below must not re-arm: this loop goes on by itself
    try {
      for (const key of keys) void this.append({ key, type: TIMER, at: now }).catch(() => {});
    } finally {
      this.firing = false;
    }
    if (keys.length === chunk) setImmediate(() => this.fire());
    else {
      this.burst = 0;
      this.arm();
    }
  }
}
