/**
 * Callers waiting until something changes (progress, a drain, a revoke's deliveries to finish): `next()`
 * resolves at the following `wake()`, which wakes every caller waiting then; they share one promise. A caller
 * that woke looks again at what it waits for, and waits again if it is not there yet:
 *
 * ```ts
 * while (busy()) await changed.next();
 * ```
 */
export class Waiters {
  private pending: Promise<void> | undefined = undefined;
  private resolve: (() => void) | undefined = undefined;
  private woken = 0;

  /** How many times {@link Waiters.wake} was called: a caller compares two readings to know whether it was. */
  get wakes(): number {
    return this.woken;
  }

  /** True while a caller waits for the next {@link Waiters.wake}. */
  get waiting(): boolean {
    return this.pending !== undefined;
  }

  /** Resolves at the next {@link Waiters.wake}. */
  next(): Promise<void> {
    if (this.pending === undefined) {
      this.pending = new Promise<void>((resolve) => {
        this.resolve = resolve;
      });
    }
    return this.pending;
  }

  /** Wakes every caller waiting now; those that call `next()` meanwhile wait for the wake after. */
  wake(): void {
    this.woken++;
    const resolve = this.resolve;
    this.pending = undefined;
    this.resolve = undefined;
    resolve?.();
  }
}
