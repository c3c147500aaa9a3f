import type { Clock, Timer } from '../core/ports.js';

/** A delivery whose broker time is older than this, as it is applied, says its shard reads a backlog. */
export const BACKLOG_MS = 1_000;
/** While a shard is behind, its consumer's lag is asked this often, to learn when nothing is left unread. */
export const LAG_POLL_MS = 250;
/** A shard is held behind at most this long at a time, whatever its lag says (or fails to: a broker down). */
export const HOLD_MAX_MS = 30_000;

/**
 * How far a shard's timers may go: windows gather broker deliveries by the time the broker appended them,
 * so a window must not close on the clock while deliveries that fall in it may still be unread. While the
 * shard is behind its input — taken over (a failover, a rebalance) and its backlog not read yet, or reading
 * deliveries more than {@link BACKLOG_MS} old — its timers fire only up to the newest delivery time applied
 * (the input's own clock, as a stream processor's); once its consumer has nothing left unread, or reads
 * deliveries as they come, they fire on the clock again.
 */
export class InputGate {
  /** The newest broker time of a delivery applied to the shard. */
  private watermark = Number.NEGATIVE_INFINITY;
  /**
   * Taken over, until the consumer first says nothing is unread or a delivery comes as it is appended (at
   * most {@link HOLD_MAX_MS}).
   */
  private held: boolean;
  /** The last delivery applied was older than {@link BACKLOG_MS}. */
  private backlog = false;
  private poll: Timer | undefined;
  private asking = false;
  private closed = false;
  /** When being behind ends at the latest ({@link HOLD_MAX_MS} after it began). */
  private behindUntil = Number.NEGATIVE_INFINITY;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly clock: Clock,
    /** Messages the shard's consumer has not taken yet (undefined: not known, as before the consumer joined). */
    private readonly lag: () => Promise<number | undefined>,
    held: boolean,
  ) {
    this.held = held;
    if (held) this.fallBehind();
  }

  /** Whether the shard's timers wait for its input now. */
  get behind(): boolean {
    return this.held || this.backlog;
  }

  /** The latest due time a timer may fire at, `now` on the clock. */
  limit(now: number): number {
    return this.behind ? Math.min(now, this.watermark) : now;
  }

  /** A delivery the broker appended at `time` is applied at `at` (the shard's time). */
  input(time: number, at: number): void {
    if (time > this.watermark) this.watermark = time;
    const old = time < at - BACKLOG_MS;
    if (!old && this.behind) return this.open(); // read as it comes: nothing older is left unread
    if (old && !this.backlog) {
      const was = this.behind;
      this.backlog = true;
      if (!was) this.fallBehind();
    }
  }

  /** Calls `listener` whenever the gate opens further than the watermark moved (the host arms again). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Asks nothing more. */
  close(): void {
    this.closed = true;
    this.poll?.cancel();
  }

  private fallBehind(): void {
    this.behindUntil = this.clock.now() + HOLD_MAX_MS;
    this.check();
  }

  /** Asks the consumer's lag now, and again every {@link LAG_POLL_MS} while behind. */
  private check(): void {
    if (this.asking || this.closed) return;
    this.poll?.cancel();
    this.poll = undefined;
    if (this.clock.now() >= this.behindUntil) return this.open();
    this.asking = true;
    void this.lag()
      .catch(() => undefined)
      .then((lag) => {
        this.asking = false;
        if (this.closed || !this.behind) return;
        if (lag === 0) return this.open();
        this.poll = this.clock.setTimer(LAG_POLL_MS, () => this.check());
      });
  }

  private open(): void {
    this.held = false;
    this.backlog = false;
    this.changed();
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
