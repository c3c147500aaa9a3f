import { messageId } from '../core/message.js';
import type { Clock, Logger, Timer } from '../core/ports.js';
import type { Slot, Workers } from '../dispatch/workers.js';
import { messageOf } from './handler-context.js';
import type { Work } from './work.js';

/** What the watchdog watches, and what it does with an attempt that hung. */
export interface WatchdogParts {
  readonly clock: Clock;
  readonly log: Logger;
  readonly timeoutMs: number;
  readonly workers: Workers<Work>;
  readonly stopping: () => boolean;
  /** Carries the work of a hung attempt on, on a fresh worker: its retry or dead letter. */
  readonly resume: (work: Work, fresh: Slot<Work>) => Promise<void>;
}

/**
 * The handler timeout: every timeoutMs / 4 it looks at each worker; an attempt it finds still running
 * `timeoutMs` after it first saw it has hung (so a timeout fires between 1 and 1.25 × timeoutMs). It aborts
 * the attempt's signal and lets a fresh worker carry the work on. Reading no clock per delivery keeps the
 * hot path cheap.
 */
export class Watchdog {
  private timer: Timer | undefined = undefined;
  /** The timer holds the process while attempts run: only it ends one that hangs. */
  private held = false;

  constructor(private readonly parts: WatchdogParts) {}

  start(): void {
    this.schedule();
  }

  stop(): void {
    this.timer?.cancel();
  }

  /** Work went to the workers: a timer that does not hold the process is set again, holding it. */
  watch(): void {
    if (this.held || this.parts.stopping() || this.timer === undefined) return;
    this.timer.cancel();
    this.schedule();
  }

  private schedule(): void {
    const every = Math.max(1, Math.min(1000, Math.ceil(this.parts.timeoutMs / 4)));
    // While an attempt runs, the watchdog holds the process (a hung one must still time out); idle, it does not.
    this.held = this.parts.workers.inFlight > 0;
    this.timer = this.parts.clock.setTimer(every, this.sweep, { keepAlive: this.held });
  }

  private readonly sweep = (): void => {
    if (this.parts.stopping()) return;
    const now = this.parts.clock.now();
    for (const slot of this.parts.workers.slots) this.look(slot, now);
    this.schedule();
  };

  private look(slot: Slot<Work>, now: number): void {
    const work = slot.job;
    if (!work || slot.waiting) return;
    if (slot.seenAttempt !== slot.attempts) {
      slot.seenAttempt = slot.attempts;
      slot.seenAtMs = now;
      return;
    }
    const { timeoutMs, log, workers, resume } = this.parts;
    if (now - slot.seenAtMs < timeoutMs) return;
    log.warn('handler timed out; its attempt counts as failed', { id: messageId(messageOf(work)), timeoutMs });
    work.context?.abort(new Error(`handler timed out after ${timeoutMs} ms`));
    workers.replace(slot, (fresh) => resume(work, fresh));
  }
}
