import { sleep } from '../core/clock.js';
import { SluiceError, reasonOf } from '../core/errors.js';
import { ERROR_HEADER, type Headers, type InboundMessage } from '../core/message.js';
import { HandlerOutcome } from '../core/outcome.js';
import type { Clock, Logger } from '../core/ports.js';
import { backoffMs } from '../dispatch/backoff.js';
import type { Slot } from '../dispatch/workers.js';
import type { CompiledSubscriber } from '../spec/compile.js';
import { DeliveryContext, type ContextHost } from './context.js';
import type { Job } from './job.js';

/** What the executor needs from its subscription. */
export interface ExecutorHost extends ContextHost {
  readonly clock: Clock;
  /** Aborted when the subscription stops: waits for a retry end, their deliveries stay uncommitted. */
  readonly stopSignal: AbortSignal;
  /** True once the subscription stops taking new work: queued jobs are abandoned. */
  readonly stopping: boolean;
  settle(job: Job): void;
  abandon(job: Job): void;
}

/**
 * Runs jobs: decode, call the handler, act on its outcome (ack, retry with backoff, reject), dead-letter
 * what is rejected or exhausted. Never throws: whatever a handler does, the worker goes on.
 */
export class Executor {
  constructor(
    private readonly sub: CompiledSubscriber,
    private readonly host: ExecutorHost,
    private readonly log: Logger,
  ) {}

  /** The worker's entry point: one job, start to end. */
  readonly run = (job: Job, slot: Slot<Job>): Promise<void> | void => {
    if (this.host.stopping || job.revoked()) return this.host.abandon(job);
    const undecodable = this.decode(job);
    if (undecodable === undefined) return this.attempt(job, slot);
    return this.deadLetter(job, slot, undecodable).then((sent) => {
      if (!sent) return;
      if (job.batch && (job.payload as unknown[]).length > 0) return this.attempt(job, slot);
      this.host.settle(job);
    });
  };

  /** A replacement worker's entry point after the slot's attempt hung past `timeoutMs`. */
  readonly resumeAfterTimeout = (job: Job, slot: Slot<Job>): Promise<void> => {
    const error = new SluiceError('HANDLER_TIMEOUT', `handler did not finish within ${this.sub.timeoutMs} ms`);
    return this.failed(job, slot, reasonOf(error), undefined).then((go) => (go ? this.attempt(job, slot) : undefined));
  };

  /**
   * Decodes the job's payload. Returns the messages that do not decode, each with its reason, or
   * undefined when all do; a batch keeps the payloads that decoded.
   */
  private decode(job: Job): [InboundMessage, string][] | undefined {
    const decode = this.sub.decode;
    if (!job.batch) {
      try {
        job.payload = decode(job.message.value);
        return undefined;
      } catch (error) {
        return [[job.message, `DECODE_FAILED: ${reasonOf(error)}`]];
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

  private async attempt(job: Job, slot: Slot<Job>): Promise<void> {
    for (;;) {
      slot.startedAtMs = this.host.clock.now();
      const ctx = (job.ctx = new DeliveryContext(job, this.host));
      let outcome: unknown;
      let failure: string | undefined;
      try {
        const result: unknown = this.sub.handler(job.payload, ctx);
        outcome = result !== null && typeof result === 'object' && typeof (result as Promise<unknown>).then === 'function' ? await result : result;
      } catch (error) {
        failure = reasonOf(error);
        if (slot.abandoned) return;
        this.log.warn('handler failed', { subscriber: this.sub.name, id: ctx.message.id, attempt: job.attempt, error });
      }
      if (slot.abandoned) return; // a replacement worker took this job when the attempt timed out
      if (failure === undefined) {
        if (outcome === undefined || outcome === null || (outcome instanceof HandlerOutcome && outcome.kind === 'ack')) {
          return this.host.settle(job);
        }
        if (!(outcome instanceof HandlerOutcome)) {
          failure = `handler returned ${typeof outcome}, not a HandlerOutcome`;
        } else if (outcome.kind === 'reject') {
          return this.deadLetterAndSettle(job, slot, outcome.reason ?? 'rejected');
        } else if (!(await this.failed(job, slot, 'retry requested', outcome.delayMs))) return;
        else continue;
      }
      if (!(await this.failed(job, slot, failure, undefined))) return;
    }
  }

  /**
   * An attempt failed: if attempts are left, wait the backoff and return true (try again); otherwise
   * dead-letter it. Returns false when the job ended here (dead-lettered, or abandoned by a stop).
   */
  private async failed(job: Job, slot: Slot<Job>, reason: string, delayMs: number | undefined): Promise<boolean> {
    const { attempts, initialMs, maxMs } = this.sub.retry;
    if (job.attempt >= attempts) {
      await this.deadLetterAndSettle(job, slot, `exhausted ${attempts} attempts: ${reason}`);
      return false;
    }
    slot.startedAtMs = Number.POSITIVE_INFINITY; // waiting, not hanging
    const waited = await sleep(this.host.clock, delayMs ?? backoffMs(job.attempt, initialMs, maxMs), this.host.stopSignal);
    if (!waited || job.revoked()) {
      this.host.abandon(job);
      return false;
    }
    job.attempt++;
    return true;
  }

  private async deadLetterAndSettle(job: Job, slot: Slot<Job>, reason: string): Promise<void> {
    const messages = job.batch ?? [job.message];
    if (await this.deadLetter(job, slot, messages.map((m) => [m, reason]))) this.host.settle(job);
  }

  /**
   * Sends each message to the dead-letter topic with its reason (or drops it where `deadLetter: false`).
   * The publish must succeed before the offset may be committed, so it is retried until it does; a stop
   * abandons the job instead (returns false), leaving it uncommitted.
   */
  private async deadLetter(job: Job, slot: Slot<Job>, entries: [InboundMessage, string][]): Promise<boolean> {
    const target = this.sub.deadLetter;
    for (const [m, reason] of entries) {
      if (target === false) {
        this.log.warn('delivery dropped (deadLetter: false)', { subscriber: this.sub.name, id: `${m.topic}/${m.partition}/${m.offset}`, reason });
        continue;
      }
      for (let tries = 1; ; tries++) {
        try {
          await this.host.publish(target, m.value, { key: m.key, headers: deadLetterHeaders(m, reason, job.attempt) });
          break;
        } catch (error) {
          this.log.error('dead-letter publish failed', { subscriber: this.sub.name, topic: target, error });
          slot.startedAtMs = Number.POSITIVE_INFINITY;
          if (!(await sleep(this.host.clock, backoffMs(tries, 100, 30_000), this.host.stopSignal))) {
            this.host.abandon(job);
            return false;
          }
        }
      }
      this.log.warn('delivery dead-lettered', { subscriber: this.sub.name, topic: target, id: `${m.topic}/${m.partition}/${m.offset}`, reason });
    }
    return true;
  }
}

function deadLetterHeaders(m: InboundMessage, reason: string, attempts: number): Headers {
  return {
    ...m.headers,
    [ERROR_HEADER]: reason,
    'x-sluice-original-topic': m.topic,
    'x-sluice-original-partition': String(m.partition),
    'x-sluice-original-offset': String(m.offset),
    'x-sluice-attempts': String(attempts),
  };
}
