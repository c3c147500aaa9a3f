import { deadlineIn } from '../core/deadline.js';
import type { Clock, PartitionLag } from '../core/ports.js';

/** How long a scrape or `app.health()` waits for the broker to tell a subscription's lag. */
export const LAG_WAIT_MS = 1_000;

/** A subscription's lag, as a scrape or `app.health()` reads it. */
export interface LagRead {
  /** Per owned partition, messages past the group's committed offset. */
  readonly lags: readonly PartitionLag[];
  /**
   * True when the broker did not answer within {@link LAG_WAIT_MS} (an outage, say), or failed: `lags` is
   * then the last answer it gave, or empty if it never did.
   */
  readonly stale: boolean;
}

/**
 * A subscription's lag asked of its broker, one question at a time, answered within {@link LAG_WAIT_MS}:
 * past it, with the last answer, marked stale, so that a scrape during a broker outage still answers in time
 * (a question under way is not asked again: the next read waits for it, within its own bound).
 */
export class LagReads {
  private last: readonly PartitionLag[] = [];
  private asking: Promise<void> | undefined;

  constructor(
    private readonly ask: () => Promise<readonly PartitionLag[]>,
    private readonly clock: Clock,
  ) {}

  async read(): Promise<LagRead> {
    this.asking ??= this.ask()
      .then((lags) => void (this.last = lags))
      .finally(() => (this.asking = undefined));
    const deadline = deadlineIn(this.clock, LAG_WAIT_MS, { keepAlive: true }); // awaited
    let answered: boolean;
    try {
      answered = await deadline.within(this.asking);
    } catch {
      answered = false; // the broker failed: the last answer, stale
    } finally {
      deadline.cancel();
    }
    return { lags: this.last, stale: !answered };
  }
}
