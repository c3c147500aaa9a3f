import type { Clock, Consumer } from '../core/ports.js';
import type { Workers } from '../dispatch/workers.js';
import type { Intake } from './intake.js';
import { LagReads, type LagRead } from './lag-reads.js';
import type { Offsets } from './offsets.js';
import type { Work } from './work.js';

/** Where a subscription's work is at one moment, counted from the state it keeps anyway. */
export interface WorkCounts {
  /** Attempts running on a worker (a dead letter being published included). */
  readonly running: number;
  /** Work taken and waiting for a worker (or behind its key under lanes). */
  readonly waitingForWorker: number;
  /** Work waiting for a retry's backoff, on no worker. */
  readonly waitingForRetry: number;
}

/** What a probe reads of its subscription. */
export interface ProbeParts {
  readonly workers: Workers<Work>;
  readonly offsets: Offsets;
  readonly intake: Intake;
  /** The subscription's consumer, once it joined. */
  readonly consumer: () => Consumer | undefined;
  /** The app's clock: a lag read waits for the broker within a bound on it. */
  readonly clock: Clock;
}

/**
 * Reads a subscription's state for metrics and health when they ask (a scrape, a probe), so that the delivery
 * path pays nothing for gauges: the workers' slots, the watermarks, the consumer's answers.
 */
export class SubscriptionProbe {
  /** The reads (and polls) counted at the last look, and when that count last moved. */
  private readsSeen = -1;
  private readAtMs = 0;

  private readonly lagReads: LagReads;

  constructor(private readonly parts: ProbeParts) {
    this.lagReads = new LagReads(async () => (await parts.consumer()?.partitionLags?.()) ?? [], parts.clock);
  }

  counts(): WorkCounts {
    const workers = this.parts.workers;
    let running = 0;
    for (const slot of workers.slots) if (slot.job !== undefined) running++;
    const waitingForRetry = workers.waitingRetry;
    return { running, waitingForWorker: Math.max(0, workers.inFlight - waitingForRetry - running), waitingForRetry };
  }

  /** Per partition with deliveries handed out: how many at or above its watermark wait to be committed. */
  uncommitted(): { readonly partition: number; readonly count: number }[] {
    return [...this.parts.offsets.watermarks()].map((m) => ({ partition: m.partition, count: m.window() }));
  }

  /** The partitions paused because their uncommitted window reached `maxUncommitted`. */
  paused(): number[] {
    return [...this.parts.offsets.watermarks()].filter((m) => m.paused).map((m) => m.partition);
  }

  assigned(): readonly number[] {
    return this.parts.consumer()?.assigned() ?? [];
  }

  /** How many assignments the consumer was given, if it says. */
  assignments(): number | undefined {
    return this.parts.consumer()?.assignments?.();
  }

  /**
   * Per owned partition, messages past the group's committed offset (empty when the consumer cannot tell),
   * as the broker tells within a bound: past it, the last answer, marked stale (see {@link LagReads}).
   */
  partitionLags(): Promise<LagRead> {
    return this.lagReads.read();
  }

  /**
   * How long ago, at `nowMs`, the subscription last polled: its consumer asked the broker for messages, or
   * it took messages, or (a consumer without a poll loop of its own) it had nothing left to take. Sampled
   * at each call: a count that moved since the last call counts as a poll now, so it is exact to within
   * the time between two calls (a probe's period).
   */
  lastPollAgoMs(nowMs: number): number {
    const consumer = this.parts.consumer();
    const polled = consumer?.polls?.();
    const count = this.parts.intake.reads + (polled ?? 0);
    const caughtUp = consumer === undefined || (polled === undefined && consumer.backlog() === 0);
    if (count !== this.readsSeen || caughtUp) {
      this.readsSeen = count;
      this.readAtMs = nowMs;
    }
    return Math.max(0, nowMs - this.readAtMs);
  }

  /**
   * How long the oldest attempt running has run, at `nowMs`, as the handler timeout's watchdog saw it (it
   * looks at the workers every `timeoutMs / 4`, at most every second): 0 when none runs.
   */
  oldestInFlightMs(nowMs: number): number {
    let oldest = 0;
    for (const slot of this.parts.workers.slots) {
      if (slot.job === undefined || slot.waiting || slot.seenAttempt !== slot.attempts) continue;
      oldest = Math.max(oldest, nowMs - slot.seenAtMs);
    }
    return oldest;
  }
}
