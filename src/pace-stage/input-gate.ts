import type { Clock, Timer } from '../core/ports.js';

/** A delivery read within this of the time the broker appended it comes as it is appended: nothing older is unread. */
export const FRESH_MS = 1_000;
/** While a shard is held, its consumer's lag is asked this often, to learn when nothing is left unread. */
export const LAG_POLL_MS = 250;
/** A shard is held at most this long, whatever its lag says (or fails to: a broker down). */
export const HOLD_MAX_MS = 30_000;

/**
 * How far the timers of a shard taken over (a failover, a rebalance) may go before it has read its
 * partition's backlog: what the broker took while the partition had no owner. While the shard is held, its
 * deliveries fall among windows at the time the broker appended them (the pacer asks `held`), and its timers
 * fire only up to the newest of those times (`limit`: the input's own clock, as a stream processor's), so
 * the gap does not close a window that the events appended during it kept open. The hold ends once a
 * delivery comes as it is appended (within {@link FRESH_MS}), or the consumer says nothing is unread (asked
 * every {@link LAG_POLL_MS}), and after {@link HOLD_MAX_MS} at most; from then on timers fire on the clock.
 */
export class InputGate {
  /** The newest broker time of a delivery applied to the shard. */
  private watermark = Number.NEGATIVE_INFINITY;
  private holding: boolean;
  private readonly holdUntil: number;
  private poll: Timer | undefined;
  private closed = false;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly clock: Clock,
    /** Messages the shard's consumer has not taken yet (undefined: not known, as before the consumer joined). */
    private readonly lag: () => Promise<number | undefined>,
    held: boolean,
  ) {
    this.holding = held;
    this.holdUntil = clock.now() + HOLD_MAX_MS;
    if (held) this.check();
  }

  /** Whether the shard is held: taken over, its backlog maybe not read yet. */
  get held(): boolean {
    return this.holding;
  }

  /** The latest due time a timer may fire at, `now` on the clock. */
  limit(now: number): number {
    return this.holding ? Math.min(now, this.watermark) : now;
  }

  /** A delivery the broker appended at `time` is applied at `at` (the shard's time). */
  input(time: number, at: number): void {
    if (time > this.watermark) this.watermark = time;
    if (this.holding && time >= at - FRESH_MS) this.open(); // read as it comes: nothing older is left unread
  }

  /** Calls `listener` when the hold ends (the host arms again). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Asks nothing more. */
  close(): void {
    this.closed = true;
    this.poll?.cancel();
  }

  /** Asks the consumer's lag now, and again every {@link LAG_POLL_MS} while held. */
  private check(): void {
    this.poll = undefined;
    if (this.closed || !this.holding) return;
    if (this.clock.now() >= this.holdUntil) return this.open();
    void this.lag()
      .catch(() => undefined)
      .then((lag) => {
        if (this.closed || !this.holding) return;
        if (lag === 0) return this.open();
        this.poll = this.clock.setTimer(LAG_POLL_MS, () => this.check());
      });
  }

  private open(): void {
    if (!this.holding) return;
    this.holding = false;
    this.poll?.cancel();
    for (const l of this.listeners) l();
  }
}
