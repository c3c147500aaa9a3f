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
  /**
   * The end of the entries in use. A partition that keeps up drains to empty on every delivery and starts
   * again at 0 over the same arrays: truncating them (`length = 0`) each time cost a runtime call per delivery.
   */
  private tail = 0;
  private next: number;
  /** Deliveries of this partition handed out and not yet finished or abandoned. */
  outstanding = 0;
  /** Of those, deliveries waiting for a retry's backoff (running nowhere). */
  waitingRetry = 0;
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
    this.offsets[this.tail] = offset;
    this.done[this.tail++] = false;
    this.outstanding++;
  }

  /** Marks an offset finished. Returns true when the watermark moved. */
  complete(offset: number): boolean {
    this.outstanding--;
    const offsets = this.offsets;
    const done = this.done;
    const length = this.tail;
    let i = this.head;
    if (i === length || offsets[i] !== offset) {
      // Not the lowest in flight: the watermark stays. Mark it, if it is in flight at all.
      this.mark(offset, i, length);
      return false;
    }
    done[i] = true;
    while (i < length && done[i]) i++; // entries past the tail are stale: the walk stops there
    this.next = offsets[i - 1]! + 1;
    if (i === length) {
      this.head = 0; // reuse the arrays from the start
      this.tail = 0;
    } else {
      // Drop the finished entries below the watermark once there are over 1,024 and they are most of the arrays.
      // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator,ArithmeticOperator: when to drop finished entries only changes memory use: dropping them at every move of the watermark, or never, leaves the same watermark and window
      const compact = i > 1024 && i * 2 > length;
      // Stryker disable next-line ConditionalExpression: as above (compacting at every move, or never)
      if (compact) {
        this.offsets = offsets.slice(i, length);
        this.done = done.slice(i, length);
        this.tail = length - i;
        this.head = 0;
      } else this.head = i;
    }
    return true;
  }

  /**
   * Marks `offset` finished if it is among offsets[lo], …, offsets[hi - 1] (which ascend): a binary search.
   * Recursive, at most about log2(window) deep, so that a search that stopped narrowing would fail at once
   * with a RangeError instead of spinning.
   */
  private mark(offset: number, lo: number, hi: number): void {
    if (lo >= hi) return; // not among them (never delivered, or below the watermark already): nothing to mark
    const mid = (lo + hi) >>> 1;
    const v = this.offsets[mid]!;
    if (v < offset) this.mark(offset, mid + 1, hi);
    else if (v > offset) this.mark(offset, lo, mid);
    else this.done[mid] = true;
  }

  /** A delivery of this partition that will not finish here (revoked, or stopped): it stays uncommitted. */
  abandon(): void {
    this.outstanding--;
  }

  /** The next offset to commit: the lowest in flight, or last delivered + 1. */
  watermark(): number {
    return this.head < this.tail ? this.offsets[this.head]! : this.next;
  }

  /** Delivered offsets at or above the watermark: the window a stuck delivery holds open. */
  window(): number {
    return this.tail - this.head;
  }
}
