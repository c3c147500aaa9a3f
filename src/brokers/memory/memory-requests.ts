import type { InboundMessage } from '../../core/message.js';
import type { GroupTopic } from './group.js';

/** Requests handed to `handle` at once at most. */
const REQUESTS_PER_RUN = 500;

interface Reading {
  readonly partition: number;
  /** The next offset to hand to `handle`. */
  position: number;
  /** The handling under way, if any: one run of messages at a time per partition. */
  draining: Promise<void> | undefined;
  stopped: boolean;
}

/**
 * A member's requests topic (see `ConsumeRequest.requests`): the partitions matching those it owns of its
 * topic, each handed to `handle` from the group's committed offset, what it holds at once (in runs of at
 * most {@link REQUESTS_PER_RUN}), and committed as far as `handle` says it handled. What it did not handle
 * (all of a run, when it rejects) is left uncommitted: the partition is tried again when a message arrives,
 * or read by its next owner from there.
 */
export class MemoryRequests {
  private readonly reading = new Map<number, Reading>();

  constructor(
    /** The group's offsets of the requests topic (it has no members of its own). */
    private readonly group: GroupTopic,
    private readonly handle: (partition: number, messages: readonly InboundMessage[]) => Promise<number>,
  ) {}

  /** Partitions assigned, ready (their `onAssign` settled): read from the group's committed offsets. */
  open(partitions: readonly number[]): void {
    for (const partition of partitions) {
      const position = this.group.committed[partition] ?? 0;
      this.reading.set(partition, { partition, position, draining: undefined, stopped: false });
      this.arrived(partition);
    }
  }

  /** A message was appended to `partition` of the requests topic. */
  arrived(partition: number): void {
    const r = this.reading.get(partition);
    if (r === undefined || r.stopped || r.draining !== undefined) return;
    r.draining = this.drain(r).finally(() => {
      r.draining = undefined;
    });
  }

  /** Requests of the partitions read here not yet handled (the one being handled too). */
  waiting(): number {
    let n = 0;
    for (const r of this.reading.values()) n += this.group.log.endOffset(r.partition) - r.position;
    return n;
  }

  /** Stops reading every partition, once the handling under way settled (a revoke waits for it). */
  async stop(): Promise<void> {
    const all = [...this.reading.values()];
    this.reading.clear();
    for (const r of all) r.stopped = true;
    await Promise.all(all.flatMap((r) => (r.draining === undefined ? [] : [r.draining])));
  }

  private async drain(r: Reading): Promise<void> {
    const log = this.group.log.partitions[r.partition]!;
    while (!r.stopped && r.position < log.length) {
      const run = log.slice(r.position, r.position + REQUESTS_PER_RUN);
      let handled: number;
      try {
        handled = Math.max(0, Math.min(run.length, Math.floor(await this.handle(r.partition, run))));
      } catch {
        return; // left uncommitted: tried again on the next arrival, or by the next owner
      }
      r.position += handled;
      this.group.readCount += handled;
      if (handled > 0) this.group.commit(r.partition, r.position);
      if (handled < run.length) return; // the rest likewise
    }
  }
}
