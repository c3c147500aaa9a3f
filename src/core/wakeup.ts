/**
 * One promise for everyone waiting until something changes: `next()` gives it, `wake()` resolves it and the
 * next `next()` gives a new one. For a loop that waits until a condition others change holds:
 *
 * ```ts
 * while (busy()) await changed.next();
 * ```
 */
export class Wakeup {
  private pending: Promise<void> | undefined = undefined;
  private resolve: (() => void) | undefined = undefined;

  /** Resolves at the next `wake()`. */
  next(): Promise<void> {
    if (this.pending === undefined) {
      this.pending = new Promise<void>((resolve) => {
        this.resolve = resolve;
      });
    }
    return this.pending;
  }

  /** Resolves what `next()` gave so far. */
  wake(): void {
    const resolve = this.resolve;
    this.pending = undefined;
    this.resolve = undefined;
    resolve?.();
  }
}
