import type { Clock, Logger, Timer } from '../../../core/ports.js';

/**
 * How long after a crash the consumer joins its group again; doubled after each crash that follows, up to
 * RESTART_MAX_MS.
 */
const RESTART_MS = 1_000;
const RESTART_MAX_MS = 15_000;

/** What {@link CrashRestarts} acts on: one group member. */
export interface Restartable {
  /** The member's group and topic, for logs. */
  readonly group: string;
  /** The topic it reads. */
  readonly topic: string;
  /** True once the consumer is closing: nothing restarts any more. */
  closing(): boolean;
  /** Revokes what the crashed consumer held (the app settles or abandons that work). */
  revokeAll(): Promise<void>;
  /** Joins the group again (kafkajs's run()); rejects only on a fault of its own. */
  run(): Promise<void>;
}

/**
 * Sluice restarts a crashed kafkajs consumer itself (kafkajs's own restarts are off), with backoff on the
 * app's clock. kafkajs gave up on the consumer (it has disconnected and left the group, or been dropped).
 * The first crash of a row is an error; the ones that follow before a batch arrives again are warnings, each
 * waiting twice as long as the one before (up to RESTART_MAX_MS), so a lasting fault (the broker down, the
 * topic deleted) is neither a busy loop nor a flood of logs.
 */
export class CrashRestarts {
  /** Crashes since a batch last arrived: how long the next restart waits. */
  private crashes = 0;
  private timer: Timer | undefined;

  constructor(
    private readonly member: Restartable,
    private readonly log: Logger,
    private readonly clock: Clock,
  ) {}

  /** A batch arrived: kafkajs reads again, and the next crash is the first of a row. */
  batchArrived(): void {
    this.crashes = 0;
  }

  /** The consumer closes: a restart waiting for its backoff does not happen. */
  cancel(): void {
    this.timer?.cancel();
  }

  /** kafkajs crashed the consumer with `error`: logs it and restarts the consumer after the backoff. */
  crashed(error: Error): void {
    const { group, topic } = this.member;
    if (this.member.closing()) return this.log.debug('kafka consumer crashed while closing', { error });
    const delayMs = Math.min(RESTART_MAX_MS, RESTART_MS * 2 ** Math.min(this.crashes, 10));
    this.crashes++;
    const missing =
      (error as { type?: string }).type === 'UNKNOWN_TOPIC_OR_PARTITION' ||
      /does not host this topic-partition/.test(error.message);
    const fields = {
      group,
      topic,
      crashes: this.crashes,
      restartInMs: delayMs,
      ...(missing ? { hint: `does topic "${topic}" exist? (deleted?)` } : {}),
    };
    if (this.crashes === 1) this.log.error('kafka consumer crashed', { ...fields, error });
    else this.log.warn('kafka consumer crashed again', { ...fields, error: error.message });
    this.restartAfter(delayMs);
  }

  /**
   * The group no longer counts the consumer as its member (its session ended while the process stalled): what it
   * held is someone else's by now. Logs a warning, revokes it all and joins again at once, as a new member; not a
   * crash, so the next crash's backoff is not lengthened.
   */
  lost(error: Error): void {
    const { group, topic } = this.member;
    if (this.member.closing()) return;
    this.log.warn('kafka consumer is no longer a member of its group (its session ended); joining again', {
      group,
      topic,
      error: error.message,
    });
    this.restartAfter(0);
  }

  /**
   * Revokes what the crashed consumer held — the app settles or abandons that work; what it finished and
   * could not commit is remembered (see `OffsetCommits`) — then joins again after `delayMs`.
   */
  private restartAfter(delayMs: number): void {
    if (this.member.closing()) return;
    void this.member
      .revokeAll()
      .catch((error: unknown) => this.log.warn('revoke failed', { error }))
      .then(() => {
        if (this.member.closing()) return;
        this.timer?.cancel();
        // Held (keepAlive): the consumer's connections, which held the process, are gone until it restarts.
        this.timer = this.clock.setTimer(delayMs, () => this.restart(), { keepAlive: true });
      });
  }

  private restart(): void {
    if (this.member.closing()) return;
    const { group, topic } = this.member;
    this.log.debug('kafka consumer restarting after a crash', { group, topic });
    // A failed join crashes (the CRASH event schedules the next try); run() rejects only on a fault of its own.
    this.member
      .run()
      .catch((error: unknown) => this.crashed(error instanceof Error ? error : new Error(String(error))));
  }
}
