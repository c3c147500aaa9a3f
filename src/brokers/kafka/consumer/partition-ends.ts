import type { Admin } from 'kafkajs';
import type { Logger } from '../../../core/ports.js';

/**
 * What the broker holds beyond what this member's batches brought: each owned partition's end (high
 * watermark) as last seen, and for a partition no batch came from yet, where kafkajs reads it from. A
 * batch held only for its partition's running work asks {@link newer} to know when to let go, so that
 * kafkajs fetches again (it fetches a broker's partitions together, once all their batches returned).
 */
export class PartitionEnds {
  private readonly ends = new Map<number, number>();
  /**
   * For owned partitions no batch came from yet: where kafkajs reads them from — the group's committed
   * offset, else (fromBeginning) the partition's start; failing both, their end when first seen.
   */
  private readonly starts = new Map<number, number>();
  private readonly firstEnds = new Map<number, number>();
  private request: Promise<void> | undefined;

  constructor(
    private readonly admin: Admin,
    private readonly topic: string,
    private readonly group: string,
    private readonly fromBeginning: boolean,
    private readonly log: Logger,
  ) {}

  /** A partition's end as a fetch reported it (a batch's high watermark). */
  seen(partition: number, end: number): void {
    this.ends.set(partition, Math.max(this.ends.get(partition) ?? 0, end));
  }

  /** A new assignment: where its partitions are read from is asked again. */
  reset(): void {
    this.starts.clear();
    this.firstEnds.clear();
  }

  /**
   * True when, in a partition of `owned`, the broker has messages that no batch brought yet; `fetchedEnd`
   * gives the offset after a partition's last batch, or undefined when none came.
   */
  newer(owned: Iterable<number>, fetchedEnd: (partition: number) => number | undefined): boolean {
    for (const q of owned) {
      const e = this.ends.get(q);
      if (e === undefined) continue;
      const fetched = fetchedEnd(q);
      if (fetched !== undefined) {
        if (e > fetched) return true;
        continue;
      }
      let start = this.starts.get(q);
      if (start === undefined) {
        start = this.firstEnds.get(q);
        if (start === undefined) {
          start = e;
          this.firstEnds.set(q, start);
        }
      }
      if (e > start) return true;
    }
    return false;
  }

  /**
   * Asks the broker for the ends, and — when `unread` — the group's committed offsets (where unread
   * partitions are read from). One request at a time, shared by every caller; a failure is only logged.
   */
  refresh(unread: boolean): Promise<void> {
    this.request ??= Promise.all([
      this.admin.fetchTopicOffsets(this.topic),
      unread ? this.admin.fetchOffsets({ groupId: this.group, topics: [this.topic] }) : undefined,
    ])
      .then(([ends, committed]) => {
        const committedOf = new Map((committed?.[0]?.partitions ?? []).map((c) => [c.partition, Number(c.offset)]));
        for (const e of ends) {
          this.seen(e.partition, Number(e.high));
          const c = committedOf.get(e.partition);
          if (c !== undefined && c >= 0)
            this.starts.set(e.partition, Math.max(c, Number(e.low))); // below the start: reset to it
          else if (c !== undefined && this.fromBeginning) this.starts.set(e.partition, Number(e.low));
        }
      })
      .catch((error: unknown) => this.log.debug('partition ends not read', { error }))
      .finally(() => {
        this.request = undefined;
      });
    return this.request;
  }
}
