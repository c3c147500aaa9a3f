import type { SluiceError } from '../core/errors.js';
import type { Alongside, Clock, Logger, StagedMessage, Timer } from '../core/ports.js';
import { backoffMs } from '../dispatch/backoff.js';
import type { Watermark } from '../dispatch/watermark.js';
import type { Slot, Workers } from '../dispatch/workers.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import { messageOf } from './handler-context.js';
import type { DeadLetters } from './dead-letters.js';
import type { Outcome } from './executor.js';
import type { Offsets } from './offsets.js';
import type { Pacer } from '../pace-stage/pacer.js';
import { isRevoked, watermarksOf, type Run, type Undecodable, type Work } from './work.js';

/** A timer due at once: on the next turn, after the worker has let the work go. */
function immediately(fire: () => void): Timer {
  const handle = setImmediate(fire);
  return { cancel: () => clearImmediate(handle) };
}

/** What the Ledger works with, besides its subscription's offsets and dead letters. */
export interface LedgerParts {
  readonly sub: CompiledSubscriber;
  readonly clock: Clock;
  readonly log: Logger;
  readonly offsets: Offsets;
  readonly deadLetters: DeadLetters;
  readonly workers: Workers<Work>;
  /** The app's pace stage, for a paced subscriber: where a run's end is recorded. */
  readonly pacer: Pacer | undefined;
  /** True once the subscription stops: retries due then are dropped. */
  readonly stopping: () => boolean;
  /** Work went back to the workers: the watchdog holds the process again. */
  readonly watch: () => void;
  /** Called when dead letters sent outside the workers are done: read again. */
  readonly pump: () => void;
}

/**
 * The last stage: applies each outcome. A delivery's or a batch's offsets become committable (the
 * watermark moves, the consumer commits); a run's end is recorded as `done`. Failed work waits for its
 * backoff and goes back to the workers, or is dead-lettered once its attempts are spent.
 */
export class Ledger {
  /** Work waiting for a retry's backoff, each with the timer that brings it back. */
  private readonly backoffs = new Map<Work, Timer>();
  /** Dead letters of undecodable deliveries, sent outside the workers: each resolves once sent (or abandoned). */
  private readonly sending = new Set<Promise<void>>();

  constructor(private readonly parts: LedgerParts) {}

  /** Nothing dead-lettered outside the workers is under way. */
  get quiet(): boolean {
    return this.sending.size === 0;
  }

  /** Resolves once the dead letters sent outside the workers are done. */
  async sent(): Promise<void> {
    await Promise.all(this.sending);
  }

  /**
   * Where an attempt's outcome arrives (the seam after Dispatch). Returns a promise only when the worker must
   * wait (a dead letter, a retry): the common case, an ack, is applied at once and costs no promise, which
   * bench/dispatch measured (docs/benchmarks.md). A batch's undecodable messages go to the dead-letter topic
   * with its first outcome, before the outcome is applied.
   */
  record(work: Work, slot: Slot<Work>, outcome: Outcome): Promise<void> | undefined {
    if (outcome.kind === 'skipped') this.abandon(work);
    else if (outcome.kind === 'acked' && work.kind !== 'batch') this.finish(work);
    else return this.recordSlowly(work, slot, outcome);
    return undefined;
  }

  private async recordSlowly(work: Work, slot: Slot<Work>, outcome: Outcome): Promise<void> {
    if (work.kind === 'batch' && work.undecodable.length > 0) {
      const bad = work.undecodable;
      work.undecodable = [];
      if (!(await this.deadLetter(work, slot, bad))) return;
    }
    await this.apply(work, slot, outcome);
  }

  /** Applies an outcome: finished, dead-lettered, or sent away to be retried. */
  private async apply(work: Work, slot: Slot<Work>, outcome: Outcome): Promise<void> {
    if (outcome.kind === 'acked') return this.finish(work);
    if (outcome.kind === 'rejected') return this.deadLetterAll(work, slot, outcome.reason);
    if (outcome.kind === 'skipped') return this.abandon(work);
    const { attempts, initialMs, maxMs } = this.parts.sub.retry;
    if (work.attempt < attempts) {
      return this.retryLater(work, slot, outcome.delayMs ?? backoffMs(work.attempt, initialMs, maxMs));
    }
    const spent = `exhausted ${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}: ${outcome.reason}`;
    await this.deadLetterAll(work, slot, spent);
  }

  /**
   * Intake's path for what did not decode (a delivery, a batch of which nothing decoded, a delivery pace
   * refused): dead-lettered without a worker. Their offsets stay uncommittable until the dead letters are out.
   */
  deadLetterNow(bad: readonly Undecodable[], marks: readonly Watermark[]): void {
    const sending = this.parts.deadLetters
      .send(bad, 1, () => {})
      .then((sent) => {
        this.sending.delete(sending);
        this.deadLettered(bad, marks, sent);
        this.parts.pump();
      });
    this.sending.add(sending);
  }

  /** Dead letters sent outside the workers are out (their offsets committable), or a stop came first. */
  private deadLettered(bad: readonly Undecodable[], marks: readonly Watermark[], sent: boolean): void {
    const offsets = this.parts.offsets;
    for (let i = 0; i < bad.length; i++) {
      if (sent) offsets.complete(marks[i]!, bad[i]!.message.offset);
      else offsets.abandon(marks[i]!);
    }
  }

  /**
   * The work is done: its offsets committable, or its run's end recorded. Under exactly-once, what an acked
   * delivery's attempt published goes with its offset, and an acked run's with its `done` record; a
   * dead-lettered one's is dropped.
   */
  private finish(work: Work, acked = true): void {
    const offsets = this.parts.offsets;
    if (work.kind === 'delivery') {
      if (!this.parts.sub.exactlyOnce) return offsets.complete(work.marks, work.message.offset);
      const staged = work.context?.takeStaged();
      return offsets.completeWith(work.marks, work.message, acked ? staged : undefined);
    }
    if (work.kind === 'batch') return work.messages.forEach((m, i) => offsets.complete(work.marks[i]!, m.offset));
    const staged = this.parts.sub.exactlyOnce ? work.context?.takeStaged() : undefined;
    const alongside = acked && staged !== undefined && staged.length > 0 ? this.alongside(work, staged) : undefined;
    this.parts.pacer!.done(work.run, alongside).catch((error: unknown) =>
      this.parts.log.error('pace: a finished run was not recorded; it may run again after a restart', {
        runId: work.run.id,
        error,
      }),
    );
  }

  /**
   * A run's publishes, to go with its `done` record. Those the store refuses for good dead-letter the run
   * instead (its `done` record goes without them).
   */
  private alongside(work: Run, messages: readonly StagedMessage[]): Alongside {
    const refused = (error: SluiceError): void => {
      const bad = [{ message: messageOf(work), reason: `its publishes were refused: ${error.message}` }];
      const sending = this.parts.deadLetters
        .send(bad, work.attempt, () => {}, work.context)
        .then(() => {
          this.sending.delete(sending);
          this.parts.pump();
        });
      this.sending.add(sending);
    };
    return { messages, refused };
  }

  /** The work will not finish here: it stays uncommitted (a run stays not done, and runs again after a restart). */
  private abandon(work: Work): void {
    if (work.kind === 'run') this.parts.pacer!.letGo(work.run);
    for (const marks of watermarksOf(work)) this.parts.offsets.abandon(marks);
  }

  private async deadLetterAll(work: Work, slot: Slot<Work>, reason: string): Promise<void> {
    const messages = work.kind === 'batch' ? work.messages : [messageOf(work)];
    if (
      await this.deadLetter(
        work,
        slot,
        messages.map((message) => ({ message, reason })),
      )
    )
      this.finish(work, false);
  }

  /** Sends dead letters from a worker (which waits, not runs, while a publish is retried); false when stopped. */
  private async deadLetter(work: Work, slot: Slot<Work>, entries: readonly Undecodable[]): Promise<boolean> {
    const wait = (): void => {
      slot.waiting = true;
    };
    const sent = await this.parts.deadLetters.send(entries, work.attempt, wait, work.context);
    if (!sent) this.abandon(work);
    return sent;
  }

  /**
   * The work leaves its worker (`slot.leavesForRetry`) and runs again, as its next attempt, after `delayMs`: its key
   * stays held and its offsets uncommitted meanwhile, and the worker takes other work.
   */
  private retryLater(work: Work, slot: Slot<Work>, delayMs: number): void {
    slot.leavesForRetry = true;
    for (const marks of watermarksOf(work)) {
      marks.waitingRetry++;
      this.parts.offsets.quietCheck(marks);
    }
    const due = (): void => {
      this.backoffs.delete(work);
      if (this.parts.stopping() || isRevoked(work)) return this.dropRetry(work);
      for (const marks of watermarksOf(work)) marks.waitingRetry--;
      work.attempt++;
      this.parts.workers.back(work);
      this.parts.watch();
    };
    // The work waits for this timer: it keeps the process alive.
    const clock = this.parts.clock;
    this.backoffs.set(work, delayMs > 0 ? clock.setTimer(delayMs, due, { keepAlive: true }) : immediately(due));
  }

  /** Work waiting for its retry's backoff will not run again here: it stays uncommitted. */
  private dropRetry(work: Work): void {
    this.backoffs.get(work)?.cancel();
    this.backoffs.delete(work);
    for (const marks of watermarksOf(work)) marks.waitingRetry--;
    this.abandon(work);
    this.parts.workers.drop(work);
  }

  /** Partitions taken away: their retries are dropped, their in-flight work awaited (bounded), then committed. */
  async revoke(partitions: readonly number[]): Promise<void> {
    const revoked = this.parts.offsets.takeAway(partitions);
    // Retries waiting for their backoff would count nowhere now: the next owner gets them again.
    for (const work of [...this.backoffs.keys()]) if (isRevoked(work)) this.dropRetry(work);
    await this.parts.offsets.commitRevoked(revoked, partitions);
  }

  /** At stop: retries waiting for their backoff are dropped; they stay uncommitted. */
  dropRetries(): void {
    for (const work of [...this.backoffs.keys()]) this.dropRetry(work);
  }
}
