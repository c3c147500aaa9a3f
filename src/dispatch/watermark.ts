/**
 * The committable position of one partition: everything below `watermark()` is finished. Offsets are
 * recorded as delivered (ascending, gaps allowed) and completed in any order; the watermark is the lowest
 * offset still in flight, or the last delivered + 1 when none is.
 */
export class Watermark {
  private offsets: number[] = [];
  // Stryker disable next-line ArrayDeclaration: a leading extra flag is never read before it is written (done[i] is set before any read of it)
  private done: boolean[] = [];
  private head = 0;
  private next: number;
  /** Deliveries of this partition handed out and not yet finished or abandoned. */
  outstanding = 0;
  /** Of those, deliveries waiting for a retry's backoff (running nowhere). */
  away = 0;
  /** Set while the partition is paused because the window reached its cap. */
  paused = false;
  /** Set when the partition was revoked: its late results are dropped. */
  revoked = false;

  constructor(
    readonly partition: number,
    /** The first offset this assignment may deliver: the committed position. */
    start = 0,
  ) {
    this.next = start;
  }

  /** Records an offset as handed out. Offsets must ascend. */
  delivered(offset: number): void {
    this.offsets.push(offset);
    this.done.push(false);
    this.outstanding++;
  }

  /** Marks an offset finished. Returns true when the watermark moved. */
  complete(offset: number): boolean {
    this.outstanding--;
    const offsets = this.offsets;
    let i = this.head;
    if (offsets[i] !== offset) {
      // Stryker disable next-line ArithmeticOperator: a search one slot wider finds the same offset (offsets ascend, and the head is not it)
      let lo = i + 1;
      // Stryker disable next-line ArithmeticOperator: as above
      let hi = offsets.length - 1;
      i = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        const v = offsets[mid]!;
        if (v === offset) { i = mid; break; }
        // Stryker disable next-line EqualityOperator: v === offset broke out of the loop just above
        if (v < offset) lo = mid + 1; else hi = mid - 1;
      }
      // Stryker disable next-line ConditionalExpression,EqualityOperator: i is -1 or at least 1 here, and done[-1] is never read
      if (i < 0) return false;
      this.done[i] = true;
      return false;
    }
    this.done[i] = true;
    const done = this.done;
    const length = offsets.length;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: done[length] is undefined, which ends the loop too
    while (i < length && done[i]) i++;
    this.next = offsets[i - 1]! + 1;
    if (i === length) {
      offsets.length = 0; // reuse the arrays: a partition that keeps up drains to empty on every delivery
      done.length = 0;
      this.head = 0;
    // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator,ArithmeticOperator: compaction only saves memory; compacting more often, less often or never gives the same watermark
    } else if (i > 1024 && i * 2 > length) {
      this.offsets = offsets.slice(i);
      this.done = done.slice(i);
      this.head = 0;
    } else this.head = i;
    return true;
  }

  /** A delivery of this partition that will not finish here (revoked, or stopped): it stays uncommitted. */
  abandon(): void {
    this.outstanding--;
  }

  /** The next offset to commit: the lowest in flight, or last delivered + 1. */
  watermark(): number {
    return this.head < this.offsets.length ? this.offsets[this.head]! : this.next;
  }

  /** Delivered offsets at or above the watermark: the window a stuck delivery holds open. */
  window(): number {
    return this.offsets.length - this.head;
  }
}
