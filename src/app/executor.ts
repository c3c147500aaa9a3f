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
import { HandlerOutcome } from '../core/outcome.js';
import type { Clock, Logger } from '../core/ports.js';
import { backoffMs } from '../dispatch/backoff.js';
import type { Slot } from '../dispatch/workers.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import type { ContextHost, Job } from './job.js';

/** `begin` markers: the job was abandoned, or nothing of it decoded. */
const ABANDONED = Symbol('abandoned');
const UNDECODABLE = Symbol('undecodable');
const ACK = HandlerOutcome.ack();
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

/** The subscription whose handler is being called at this moment (its synchronous part), if any. */
let calling: ExecutorHost | undefined;

/** Asked by `app.stop()`: whether it is called from a handler of one of the app's subscriptions. */
export function callingHandlerHost(): ExecutorHost | undefined {
  return calling;
}

/** What the executor needs from its subscription. */
export interface ExecutorHost extends ContextHost {
  readonly clock: Clock;
  /**
   * Aborted when the subscription stops: a dead letter's publish stops being retried, its delivery stays uncommitted.
   */
  readonly stopSignal: AbortSignal;
  /** True once the subscription stops taking new work: queued jobs are abandoned. */
  readonly stopping: boolean;
  settle(job: Job): void;
  abandon(job: Job): void;
  /**
   * The job leaves its worker (`slot.away`) and runs again, as its next attempt, after `delayMs`: its key
   * stays held and its offset uncommitted meanwhile, and the worker takes other work.
   */
  retryLater(job: Job, slot: Slot<Job>, delayMs: number): void;
}

/**
 * Runs jobs: decode, call the handler, act on its outcome (ack, retry with backoff, reject), dead-letter
 * what is rejected or exhausted. Never throws: whatever a handler does, the worker goes on.
 */
export class Executor {
  readonly counts: DeadLetterCounts = { published: 0, stripped: 0, lost: 0, dropped: 0 };

  constructor(
    private readonly sub: CompiledSubscriber,
    private readonly host: ExecutorHost,
    private readonly log: Logger,
  ) {}

  /**
   * The worker's first step: checks, decodes and calls the handler for the first attempt. Returns what
   * the handler returned (the worker awaits it), or a marker when there is no handler call to wait for.
   */
  readonly begin = (job: Job, slot: Slot<Job>): unknown => {
    if (this.host.stopping || job.revoked()) {
      this.host.abandon(job);
      return ABANDONED;
    }
    if (!job.decoded) {
      job.undecodable = this.decode(job);
      job.decoded = true;
    }
    if (job.undecodable !== undefined && !(job.batch && (job.payload as unknown[]).length > 0)) return UNDECODABLE;
    slot.attempts++;
    slot.waiting = false;
    job.beginAttempt();
    const outer = calling;
    calling = this.host;
    try {
      return this.sub.handler(job.payload, job);
    } finally {
      calling = outer;
    }
  };

  /**
   * The worker's second step, with the first attempt's result (awaited). The common case, an ack, settles
   * at once; anything else continues on the slow path, which the worker awaits.
   */
  readonly end = (job: Job, slot: Slot<Job>, result: unknown, failed: boolean): Promise<void> | void => {
    if (result === ABANDONED) return;
    if (!failed && job.undecodable === undefined && (result === undefined || result === null || result === ACK))
      return this.host.settle(job);
    return this.slowPath(job, slot, result, failed);
  };

  /** A replacement worker's entry point after the slot's attempt hung past `timeoutMs`. */
  readonly resumeAfterTimeout = async (job: Job, slot: Slot<Job>): Promise<void> => {
    const error = new SluiceError('HANDLER_TIMEOUT', `handler did not finish within ${this.sub.timeoutMs} ms`);
    await this.failed(job, slot, reasonOf(error), undefined);
  };

  private async slowPath(job: Job, slot: Slot<Job>, result: unknown, failed: boolean): Promise<void> {
    if (job.undecodable !== undefined) {
      const bad = job.undecodable;
      job.undecodable = undefined;
      if (!(await this.deadLetter(job, slot, bad))) return;
      if (result === UNDECODABLE) return this.host.settle(job);
    }
    await this.judge(job, slot, result, failed);
  }

  /** Acts on one attempt's result: settles it, dead-letters it, or sends it away to be retried. */
  private async judge(job: Job, slot: Slot<Job>, result: unknown, failed: boolean): Promise<void> {
    if (failed) {
      this.log.warn('handler failed', { id: messageId(job.delivery), attempt: job.attempt, error: result });
      return this.failed(job, slot, reasonOf(result), undefined);
    }
    if (result === undefined || result === null || result === ACK) return this.host.settle(job);
    if (!(result instanceof HandlerOutcome))
      return this.failed(job, slot, `handler returned ${typeof result}, not a HandlerOutcome`, undefined);
    if (result.kind === 'reject') return this.deadLetterAndSettle(job, slot, result.reason ?? 'rejected');
    if (result.kind === 'retry') return this.failed(job, slot, 'retry requested', result.delayMs);
    this.host.settle(job);
  }

  /**
   * Decodes the job's payload. Returns the messages that do not decode, each with its reason, or
   * undefined when all do; a batch keeps the payloads that decoded.
   */
  decode(job: Job): [InboundMessage, string][] | undefined {
    const decode = this.sub.decode;
    if (!job.batch) {
      try {
        job.payload = decode(job.delivery.value);
        return undefined;
      } catch (error) {
        return [[job.delivery, `DECODE_FAILED: ${reasonOf(error)}`]];
      }
    }
    const payloads: unknown[] = [];
    const bad: [InboundMessage, string][] = [];
    for (const m of job.batch) {
      try {
        payloads.push(decode(m.value));
      } catch (error) {
        bad.push([m, `DECODE_FAILED: ${reasonOf(error)}`]);
      }
    }
    job.payload = payloads;
    return bad.length > 0 ? bad : undefined;
  }

  /**
   * An attempt failed: if attempts are left, the job goes away to wait for its backoff (its worker is
   * free meanwhile) and runs again; otherwise it is dead-lettered.
   */
  private async failed(job: Job, slot: Slot<Job>, reason: string, delayMs: number | undefined): Promise<void> {
    const { attempts, initialMs, maxMs } = this.sub.retry;
    if (job.attempt >= attempts) {
      return this.deadLetterAndSettle(
        job,
        slot,
        `exhausted ${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}: ${reason}`,
      );
    }
    this.host.retryLater(job, slot, delayMs ?? backoffMs(job.attempt, initialMs, maxMs));
  }

  private async deadLetterAndSettle(job: Job, slot: Slot<Job>, reason: string): Promise<void> {
    const messages = job.batch ?? [job.delivery];
    if (
      await this.deadLetter(
        job,
        slot,
        messages.map((m) => [m, reason]),
      )
    )
      this.host.settle(job);
  }

  /**
   * Sends each message to the dead-letter topic with its reason (or drops it where `deadLetter: false`).
   * The dead letter is the original message (key, value and header bytes, repeated headers, a null value)
   * plus Sluice's headers. A publish must succeed before the offset may be committed, so one that fails is
   * retried until it does; a stop abandons the job instead (returns false), leaving it uncommitted.
   *
   * A dead letter the broker refuses for good (`PUBLISH_REFUSED`: too large, invalid) is sent again
   * stripped: Sluice's headers and the original key only, an empty value. Should even that be refused, the
   * message is lost: logged as an error with its coordinates, counted, and its offset committed, so that
   * the partition goes on.
   */
  private async deadLetter(job: Job, slot: Slot<Job>, entries: [InboundMessage, string][]): Promise<boolean> {
    const target = this.sub.deadLetter;
    for (const [m, reason] of entries) {
      const where = { subscriber: this.sub.name, id: messageId(m), reason };
      if (target === false) {
        this.log.warn('delivery dropped (deadLetter: false)', where);
        this.counts.dropped++;
        continue;
      }
      const raw = rawOf(m);
      const ours = deadLetterHeaders(m, reason, job.attempt);
      const key = raw.key ?? undefined;
      const whole = await this.publish(slot, target, raw.value, {
        key,
        headers: { ...raw.headers, ...ours },
        tombstone: raw.value === null,
      });
      if (whole === 'stopped') return this.abandoned(job);
      if (whole === 'published') {
        this.counts.published++;
        this.log.warn('delivery dead-lettered', { ...where, topic: target });
        continue;
      }
      this.log.error('dead letter refused by the broker; sending it stripped of its value and headers', {
        ...where,
        topic: target,
        error: whole,
      });
      const stripped = {
        ...ours,
        [STRIPPED_HEADER]: reasonOf(whole),
        'x-sluice-original-value-bytes': String(raw.value?.byteLength ?? 0),
      };
      const retry = await this.publish(slot, target, NO_BYTES, { key, headers: stripped });
      if (retry === 'stopped') return this.abandoned(job);
      if (retry === 'published') {
        this.counts.stripped++;
        this.log.warn('delivery dead-lettered stripped', { ...where, topic: target });
        continue;
      }
      this.counts.lost++;
      this.log.error('dead letter lost: the broker refused it even stripped; its offset is committed', {
        ...where,
        topic: m.topic,
        partition: m.partition,
        offset: m.offset,
        deadLetterTopic: target,
        error: retry,
      });
    }
    return true;
  }

  /**
   * Publishes one dead letter, retrying with backoff what may pass later. Returns `published`, `stopped` when
   * the subscription stopped first, or the broker's refusal when it refuses the message for good.
   */
  private async publish(
    slot: Slot<Job>,
    topic: string,
    value: unknown,
    options: PublishOptions,
  ): Promise<'published' | 'stopped' | SluiceError> {
    for (let tries = 1; ; tries++) {
      try {
        await this.host.publish(topic, value, options);
        return 'published';
      } catch (error) {
        if (error instanceof SluiceError && error.code === 'PUBLISH_REFUSED') return error;
        this.log.error('dead-letter publish failed', { subscriber: this.sub.name, topic, error });
        slot.waiting = true;
        if (!(await sleep(this.host.clock, backoffMs(tries, 100, 30_000), this.host.stopSignal, { keepAlive: true })))
          return 'stopped';
      }
    }
  }

  private abandoned(job: Job): false {
    this.host.abandon(job);
    return false;
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
