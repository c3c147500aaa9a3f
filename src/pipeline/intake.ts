import { SluiceError, reasonOf } from '../core/errors.js';
import { messageId, type Headers, type InboundMessage } from '../core/message.js';
import type { Clock, Consumer, Logger } from '../core/ports.js';
import type { Workers } from '../dispatch/workers.js';
import { decodeJson, type CompiledSubscriber } from '../declare/compile.js';
import { writtenAsParsed } from '../pace/json-value.js';
import type { PaceRun, Receipt } from '../pace/rules.js';
import type { Ledger } from './ledger.js';
import type { Offsets } from './offsets.js';
import type { PipelineObserver } from './delivery-events.js';
import type { Pacer } from '../pace-stage/pacer.js';
import type { Undecodable, Work } from './work.js';

/** Deliveries of a paced subscriber being appended to its coordinators at once, at most. */
export const PACE_INTAKE = 16_000;
/**
 * Of those, from one partition at most. Under a store owned by partition a partition's events go to its own
 * shard, whose appends are journaled a transaction after another: taken one partition's batch at a time, the
 * whole intake went to one shard and one transaction was under way while the other shards' logs stood idle.
 * With room for a few partitions at once, their transactions run side by side. And with room for two
 * transactions' worth of a partition (a Kafka store's carries at most 2,000 appends), the next transaction's
 * events are read, decoded and applied while the one before commits: with room for one, the thread waited on
 * each commit with nothing to do.
 */
export const PACE_INTAKE_PER_PARTITION = 4_000;
/**
 * And of bytes (the deliveries' values) about this many: past it no more is taken. The counts above are set for
 * small events; large ones are held to this budget instead. A take asks for as many deliveries as the budget
 * left holds of the largest seen so far (the first delivery alone), at least one and at most PACE_TAKE:
 * deliveries larger than any before overshoot it by one take at most.
 */
export const PACE_INTAKE_BYTES = 64 * 1024 * 1024;
/** Paced deliveries taken from the consumer at once, at most. */
const PACE_TAKE = 256;

/**
 * What `decode` gives for a message that does not decode: why. No decoder can return one (the class is this
 * module's), and a message that decodes costs no object beyond its payload.
 */
class Undecoded {
  constructor(readonly bad: Undecodable) {}
}

/** What Intake works with. */
export interface IntakeParts {
  readonly sub: CompiledSubscriber;
  readonly clock: Clock;
  readonly log: Logger;
  readonly offsets: Offsets;
  readonly ledger: Ledger;
  readonly workers: Workers<Work>;
  /** The app's pace stage, for a paced subscriber: its deliveries become events there. */
  readonly pacer: Pacer | undefined;
  readonly stopping: () => boolean;
  /** Where work leaves Intake for Dispatch. */
  readonly dispatch: (work: Work) => void;
  /** Called after each read: the subscription may have become idle. */
  readonly progress: () => void;
  /**
   * For a paced delivery whose pace key lands in another partition than its own (a store owned by partition):
   * sends its event to that partition's owner, resolving once it is on its way; undefined when it stays here.
   */
  readonly forward?: (key: string, m: InboundMessage, event: unknown) => Promise<void> | undefined;
  /** Told of deliveries that reach no handler (did not decode, dropped by pace), when the app has metrics. */
  readonly observer?: PipelineObserver | undefined;
  /**
   * Told of each paced delivery's receipt with its headers as the event is applied, before its run leaves, when
   * the app has tracing (a run's span links to them).
   */
  readonly runJoined?: ((receipt: Receipt, headers: Headers) => void) | undefined;
}

/**
 * The first stage: takes a consumer's messages while the workers have room (or a paced subscriber's
 * appends allow), decodes each once and keys it, and hands on `Work`; a paced run that left its
 * coordinator becomes `Work` too. What does not decode goes straight to the Ledger's dead letters.
 */
export class Intake {
  /** Paced deliveries being appended to their coordinators. */
  appending = 0;
  /** Their values' bytes (see PACE_INTAKE_BYTES). */
  appendingBytes = 0;
  /** The largest paced delivery's value seen, in bytes; 0 before the first (which is taken alone). */
  private largest = 0;
  /** Of those, by partition (see PACE_INTAKE_PER_PARTITION). */
  private readonly appendingOf = new Map<number, number>();
  private readonly pacedRoom = (partition: number): number =>
    PACE_INTAKE_PER_PARTITION - (this.appendingOf.get(partition) ?? 0);
  /** Calls of the consumer's `take`: health reads whether it moves (see `SubscriptionProbe.lastPollAgoMs`). */
  reads = 0;
  private consumer: Consumer | undefined = undefined;
  private pumping = false;
  private pumpQueued = false;

  constructor(private readonly parts: IntakeParts) {}

  connect(consumer: Consumer): void {
    this.consumer = consumer;
  }

  /** Takes as much as there is room for. Called on readable, and whenever work finishes. */
  readonly pump = (): void => {
    const consumer = this.consumer;
    if (this.pumping || this.parts.stopping() || !consumer) return this.parts.progress();
    this.pumping = true;
    try {
      if (this.parts.pacer) this.takePaced(consumer, this.parts.pacer);
      else this.take(consumer);
    } finally {
      this.pumping = false;
    }
    this.parts.progress();
  };

  /**
   * Pumps once the appends told together are all told: a transaction's appends become durable at once, and a
   * pump for each would read the consumer a message at a time.
   */
  private pumpSoon(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    queueMicrotask(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  /** A paced run whose window closed: to the workers, by its key under lanes. */
  readonly runArrived = (run: PaceRun): void => {
    const { sub, pacer } = this.parts;
    if (this.parts.stopping()) return pacer!.letGo(run); // recorded as started: it runs again after the restart
    // A batch run gets its events; a debounced run, or a start that is a run by itself, its one event.
    const payload = pacer!.paceOf(sub.name)?.kind === 'batch' ? run.events : run.events[0];
    const arrivedAt = this.parts.clock.now();
    // Keyed for turns and lanes (a pool without turns ignores the key).
    const key = run.key;
    this.parts.dispatch({
      kind: 'run',
      run,
      payload,
      topic: sub.topic,
      arrivedAt,
      key,
      held: () => pacer!.holds(run),
      order: run.order,
      attempt: 1,
      context: undefined,
    });
  };

  private take(consumer: Consumer): void {
    const { workers, sub } = this.parts;
    const batchMax = sub.batchMax;
    for (let room = workers.room(); room > 0; room = workers.room()) {
      const taken = consumer.take(batchMax === undefined ? room : batchMax);
      this.reads++;
      if (taken.length === 0) break;
      if (batchMax !== undefined) this.batch(taken);
      else for (const m of taken) this.delivery(m);
    }
  }

  private delivery(m: InboundMessage): void {
    if (!this.parts.offsets.admits(m)) return; // exactly-once: committed by the partition's earlier holder
    const marks = this.parts.offsets.track(m);
    const payload = this.decode(m);
    if (payload instanceof Undecoded) return this.parts.ledger.deadLetterNow([payload.bad], [marks]);
    const key = this.parts.sub.byKey ? this.keyOf(m, payload) : undefined;
    this.parts.dispatch({
      kind: 'delivery',
      message: m,
      payload,
      marks,
      key,
      order: 0,
      attempt: 1,
      context: undefined,
    });
  }

  private batch(messages: readonly InboundMessage[]): void {
    const marks = messages.map((m) => this.parts.offsets.track(m));
    const payload: unknown[] = [];
    const undecodable: Undecodable[] = [];
    for (const m of messages) {
      const decoded = this.decode(m);
      if (decoded instanceof Undecoded) undecodable.push(decoded.bad);
      else payload.push(decoded);
    }
    if (payload.length === 0) return this.parts.ledger.deadLetterNow(undecodable, marks);
    this.parts.dispatch({
      kind: 'batch',
      messages,
      marks,
      payload,
      undecodable,
      key: undefined,
      order: 0,
      attempt: 1,
      context: undefined,
    });
  }

  /** The one place a message is decoded: its payload, or why it does not decode. */
  private decode(m: InboundMessage): unknown {
    try {
      return this.parts.sub.decode(m.value);
    } catch (error) {
      this.parts.observer?.handled('decode_failed');
      return new Undecoded({ message: m, reason: `DECODE_FAILED: ${reasonOf(error)}` });
    }
  }

  /** The key a delivery is dispatched (or paced) by: the key function's, else the message's. */
  private keyOf(m: InboundMessage, payload: unknown): string | undefined {
    const keyFn = this.parts.sub.key;
    if (!keyFn) return m.key;
    try {
      const key: unknown = keyFn({ value: payload, key: m.key, headers: m.headers, topic: m.topic });
      if (typeof key === 'string' || key === undefined || key === null) return key ?? undefined;
      if (typeof key === 'number' || typeof key === 'bigint' || typeof key === 'boolean') return String(key);
      throw new TypeError(`the key must be a string, got ${typeof key}`);
    } catch (error) {
      this.parts.log.warn('key function threw (or gave no string); the message key is used instead', { error });
      return m.key;
    }
  }

  /**
   * A paced subscriber's reading: each delivery becomes an event of its key's coordinator, and its offset
   * becomes committable once that event is durable. At most PACE_INTAKE appends are under way,
   * PACE_INTAKE_PER_PARTITION of one partition, and about PACE_INTAKE_BYTES.
   */
  private takePaced(consumer: Consumer, pacer: Pacer): void {
    for (let room = this.pacedRoomNow(); room > 0; room = this.pacedRoomNow()) {
      const taken = consumer.take(room, this.pacedRoom);
      this.reads++;
      if (taken.length === 0) break;
      for (const m of taken) this.paced(m, pacer);
    }
  }

  /** How many paced deliveries to take now: within PACE_INTAKE, and PACE_INTAKE_BYTES at the largest size seen. */
  private pacedRoomNow(): number {
    const bytes = PACE_INTAKE_BYTES - this.appendingBytes;
    if (bytes <= 0) return 0;
    if (this.largest === 0) return Math.min(1, PACE_INTAKE - this.appending);
    return Math.min(PACE_INTAKE - this.appending, PACE_TAKE, Math.max(1, Math.floor(bytes / this.largest)));
  }

  private paced(m: InboundMessage, pacer: Pacer): void {
    const { offsets, ledger, sub } = this.parts;
    const marks = offsets.track(m);
    const size = m.value.length;
    if (size >= this.largest) this.largest = Math.max(size, 1); // 1 at least: known, even for empty values
    const payload = this.decode(m);
    if (payload instanceof Undecoded) return ledger.deadLetterNow([payload.bad], [marks]);
    this.began(m.partition, 1, size);
    const key = this.keyOf(m, payload) ?? '';
    const appended = (receipt: unknown): void => {
      if ((receipt as Receipt | undefined)?.kind === 'dropped') this.parts.observer?.handled('dropped');
      this.began(m.partition, -1, -size);
      offsets.complete(marks, m.offset);
      this.pumpSoon();
    };
    const refused = (error: unknown): void => {
      this.began(m.partition, -1, -size);
      if (error instanceof SluiceError && error.code === 'SEND_INVALID') {
        // Not JSON, a key or event past pace's limits, an order that is not a number: it never will be. Its offset
        // is committed once it is dead-lettered.
        const reason = `DECODE_FAILED: the delivery cannot be journaled for pace: ${error.message}`;
        this.parts.observer?.handled('decode_failed');
        return ledger.deadLetterNow([{ message: m, reason }], [marks]);
      }
      this.parts.log.error('pace: the event was not recorded; its delivery stays uncommitted', {
        id: messageId(m),
        error,
      });
      offsets.abandon(marks);
      this.pump();
    };
    let taken: Promise<unknown> | undefined;
    try {
      taken = sub.key ? this.parts.forward?.(key, m, payload) : undefined;
    } catch (error) {
      return refused(error); // an event that is no JSON, a key past the limit: never will be
    }
    const joined = this.parts.runJoined;
    // Decoded as JSON and nothing else: the journal keeps the payload's bytes (unless JSON would write its value
    // otherwise: -0, a number past the double range; then the value is copied and encoded, as a sent event is).
    const json = sub.decode === decodeJson && writtenAsParsed(payload) ? m.value : undefined;
    const event = json === undefined ? { key, event: payload, source: m } : { key, event: payload, source: m, json };
    taken ??= pacer.append(sub.name, event, joined && ((r) => joined(r, m.headers)));
    taken.then(appended, refused);
  }

  /** Counts `n` more (or, negative, fewer) appends under way of `partition`, and `bytes` more (or fewer). */
  private began(partition: number, n: number, bytes: number): void {
    this.appending += n;
    this.appendingBytes += bytes;
    this.appendingOf.set(partition, (this.appendingOf.get(partition) ?? 0) + n);
  }
}
