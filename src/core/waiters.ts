/**
 * Callers waiting for something to happen (progress, a drain, a revoke's deliveries to finish): each
 * `next()` resolves at the following `wake()`, which wakes every caller waiting then. A caller that woke
 * looks again at what it waits for, and waits again if it is not there yet.
 */
export class Waiters {
  private waiting: (() => void)[] = [];

  /** How many callers are waiting. */
  get size(): number {
    return this.waiting.length;
  }

  /** Resolves at the next {@link Waiters.wake}. */
  next(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
    });
  }

  /** Wakes every caller waiting now; those that call `next()` meanwhile wait for the wake after. */
  wake(): void {
    if (this.waiting.length === 0) return;
    const woken = this.waiting;
    this.waiting = [];
    for (const resolve of woken) resolve();
  }
}
