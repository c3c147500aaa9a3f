import { sleep } from '../core/clock.js';
import { SluiceError, reasonOf } from '../core/errors.js';
import {
  ERROR_HEADER,
  messageId,
  rawOf,
  type Headers,
  type InboundMessage,
  type PublishOptions,
} from '../core/message.js';
import type { Context } from '../core/context.js';
import type { Clock, Logger } from '../core/ports.js';
import { backoffMs } from '../dispatch/backoff.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import type { PublishFrom } from './middlewares.js';
import type { Undecodable } from './work.js';

const NO_BYTES = new Uint8Array(0);

/**
 * The header of a dead letter sent stripped, `x-sluice-stripped`: why the broker refused the whole one
 * (`PUBLISH_REFUSED`: too large, invalid). A stripped dead letter keeps the original key, has an empty
 * value and only Sluice's headers, plus this one and `x-sluice-original-value-bytes`; the original
 * topic, partition and offset headers tell where to find the message.
 *
 * @category Messages
 */
export const STRIPPED_HEADER = 'x-sluice-stripped';

/**
 * What became of a subscriber's dead letters (since its app started).
 *
 * @category App
 */
export interface DeadLetterCounts {
  /** Published whole: the original message with Sluice's headers. */
  published: number;
  /** Refused whole by the broker, published stripped of the value and the original headers. */
  stripped: number;
  /** Refused even stripped: logged as errors and committed without a dead letter. */
  lost: number;
  /** Dropped, as `deadLetter: false` says. */
  dropped: number;
}

/** What one `send` publishes with: the wait's callback, the context for the publish middlewares. */
interface Sending {
  readonly onWait: () => void;
  readonly context: Context | undefined;
}

/** How one dead letter's publish ended. */
type Sent = 'published' | 'stopped' | SluiceError;

/**
 * Sends messages to the subscriber's dead-letter topic, each with its reason (or drops them where
 * `deadLetter: false`). A dead letter is the original message (key, value and header bytes, repeated
 * headers, a null value) plus Sluice's headers. A publish must succeed before the offset may be committed,
 * so one that fails is retried until it does; a stop ends the retries (`send` returns false: the work stays
 * uncommitted).
 *
 * A dead letter the broker refuses for good (`PUBLISH_REFUSED`: too large, invalid) is sent again stripped:
 * Sluice's headers and the original key only, an empty value. Should even that be refused, the message is
 * lost: logged as an error with its coordinates, counted, and its offset committed, so that the partition
 * goes on.
 */
export class DeadLetters {
  readonly counts: DeadLetterCounts = { published: 0, stripped: 0, lost: 0, dropped: 0 };

  constructor(
    private readonly sub: CompiledSubscriber,
    /** The broker's publish, through the app's publish middlewares. */
    private readonly publishFrom: PublishFrom,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Aborted when the subscription stops: a publish stops being retried. */
    private readonly stopSignal: AbortSignal,
  ) {}

  /**
   * Sends each entry; true once all are published (or dropped, or lost), false when a stop came first.
   * `onWait` is called before each wait for a retry of a failed publish; `context` is the handler context of the
   * work dead-lettered, for the publish middlewares (none for a message that did not decode).
   */
  async send(
    entries: readonly Undecodable[],
    attempts: number,
    onWait: () => void,
    context?: Context,
  ): Promise<boolean> {
    const sending: Sending = { onWait, context };
    for (const entry of entries) if (!(await this.sendOne(entry, attempts, sending))) return false;
    return true;
  }

  private async sendOne({ message: m, reason }: Undecodable, attempts: number, sending: Sending): Promise<boolean> {
    const target = this.sub.deadLetter;
    const where = { subscriber: this.sub.name, id: messageId(m), reason };
    if (target === false) {
      this.log.warn('delivery dropped (deadLetter: false)', where);
      this.counts.dropped++;
      return true;
    }
    const raw = rawOf(m);
    const ours = deadLetterHeaders(m, reason, attempts);
    const key = raw.key ?? undefined;
    const headers = { ...raw.headers, ...ours };
    const whole = await this.publish(target, raw.value, { key, headers, tombstone: raw.value === null }, sending);
    if (whole === 'stopped') return false;
    if (whole === 'published') {
      this.counts.published++;
      this.log.warn('delivery dead-lettered', { ...where, topic: target });
      return true;
    }
    this.log.error('dead letter refused by the broker; sending it stripped of its value and headers', {
      ...where,
      topic: target,
      error: whole,
    });
    return this.sendStripped(m, target, ours, whole, sending, where);
  }

  private async sendStripped(
    m: InboundMessage,
    target: string,
    ours: Headers,
    refusal: SluiceError,
    sending: Sending,
    where: Record<string, unknown>,
  ): Promise<boolean> {
    const raw = rawOf(m);
    const headers = {
      ...ours,
      [STRIPPED_HEADER]: reasonOf(refusal),
      'x-sluice-original-value-bytes': String(raw.value?.byteLength ?? 0),
    };
    const sent = await this.publish(target, NO_BYTES, { key: raw.key ?? undefined, headers }, sending);
    if (sent === 'stopped') return false;
    if (sent === 'published') {
      this.counts.stripped++;
      this.log.warn('delivery dead-lettered stripped', { ...where, topic: target });
      return true;
    }
    this.counts.lost++;
    this.log.error('dead letter lost: the broker refused it even stripped; its offset is committed', {
      ...where,
      topic: m.topic,
      partition: m.partition,
      offset: m.offset,
      deadLetterTopic: target,
      error: sent,
    });
    return true;
  }

  /**
   * Publishes one dead letter, retrying with backoff what may pass later. Returns `published`, `stopped` when
   * the subscription stopped first, or the broker's refusal when it refuses the message for good.
   */
  private async publish(topic: string, value: unknown, options: PublishOptions, sending: Sending): Promise<Sent> {
    for (let tries = 1; ; tries++) {
      try {
        await this.publishFrom(sending.context, topic, value, options);
        return 'published';
      } catch (error) {
        if (error instanceof SluiceError && error.code === 'PUBLISH_REFUSED') return error;
        this.log.error('dead-letter publish failed', { subscriber: this.sub.name, topic, error });
        sending.onWait();
        if (!(await sleep(this.clock, backoffMs(tries, 100, 30_000), this.stopSignal, { keepAlive: true })))
          return 'stopped';
      }
    }
  }
}

/** Sluice's headers on a dead letter (over the original message's own). */
function deadLetterHeaders(m: InboundMessage, reason: string, attempts: number): Headers {
  return {
    [ERROR_HEADER]: reason,
    'x-sluice-original-topic': m.topic,
    'x-sluice-original-partition': String(m.partition),
    'x-sluice-original-offset': String(m.offset),
    'x-sluice-attempts': String(attempts),
  };
}
