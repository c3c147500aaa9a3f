import type { Consumer as KafkajsConsumer } from 'kafkajs';
import type { Logger } from '../../../core/ports.js';
import type { PartitionFeed } from './partition-feed.js';

/**
 * A group member's commits of one topic, and what it remembers of them:
 *
 * - a commit counts once the coordinator took it. kafkajs's `commitOffsets` also returns, without an error,
 *   having sent nothing, while its consumer is crashed, restarting or stopping; what was taken is known
 *   from its COMMIT_OFFSETS event, emitted only after the coordinator's answer;
 * - one request at a time, and callers while one is under way share the next (which sends what is pending
 *   when it starts): with the broker away, where each request takes kafkajs's whole retry budget, flushes
 *   do not pile up;
 * - per partition not owned (any more, or not yet again), the offset below which this member finished
 *   every delivery where that was not committed (the broker was away, or the partition was taken before
 *   the member knew): if the partition comes back, what is below is not handed out again, and committed.
 */
export class OffsetCommits {
  private readonly accepted = new Map<number, number>();
  private readonly finished = new Map<number, number>();
  private chain: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  private failing = false;

  constructor(
    private readonly topic: string,
    private readonly log: Logger,
    /** The feeds whose commits may be sent now (owned, not lost). */
    private readonly due: () => Iterable<PartitionFeed>,
    private readonly consumer: () => KafkajsConsumer | undefined,
  ) {}

  /** Learns from `consumer` which commits the coordinator took. */
  watch(consumer: KafkajsConsumer): void {
    consumer.on(consumer.events.COMMIT_OFFSETS, (e) => {
      for (const t of e.payload.topics)
        if (t.topic === this.topic) for (const q of t.partitions) this.accepted.set(q.partition, Number(q.offset));
    });
  }

  /** Keeps `offset` of a partition not owned as finished here, unless the coordinator has it already. */
  remember(partition: number, offset: number): void {
    if ((this.accepted.get(partition) ?? -1) >= offset) return;
    if (offset > (this.finished.get(partition) ?? -1)) this.finished.set(partition, offset);
  }

  /** A feed leaves: what it finished and did not commit is remembered. */
  left(f: PartitionFeed): void {
    if (pending(f)) this.remember(f.partition, f.committable!);
  }

  /** What was finished here below which a partition that came back is not handed out again (once). */
  takeFinished(partition: number): number | undefined {
    const w = this.finished.get(partition);
    this.finished.delete(partition);
    return w;
  }

  /** Sends every pending commit of `due()`; see the class. */
  flush(): Promise<void> {
    if (this.queued) return this.queued;
    const send = (): Promise<void> => {
      this.queued = undefined;
      return this.send();
    };
    const queued = this.chain.then(send, send);
    this.chain = queued;
    this.queued = queued;
    return queued;
  }

  private async send(): Promise<void> {
    const offsets: { topic: string; partition: number; offset: string }[] = [];
    const sent: [PartitionFeed, number][] = [];
    for (const f of this.due()) {
      if (!pending(f)) continue;
      offsets.push({ topic: this.topic, partition: f.partition, offset: String(f.committable) });
      sent.push([f, f.committable!]);
    }
    const consumer = this.consumer();
    if (offsets.length === 0 || !consumer) return;
    try {
      await consumer.commitOffsets(offsets);
      let missed = 0;
      for (const [f, c] of sent) {
        if ((this.accepted.get(f.partition) ?? -1) >= c) f.committed = Math.max(f.committed ?? -1, c);
        else missed++;
      }
      if (missed > 0)
        throw new Error('not sent: the consumer is not a member of its group now (crashed, restarting or stopping)');
      this.failing = false;
    } catch (error) {
      // Tried again on the next flush. After a rebalance the commit is refused; what it held is delivered
      // again (at least once). The first failure of a row is a warning, the rest debug.
      this.log[this.failing ? 'debug' : 'warn']('commit not taken; trying again', { error, offsets });
      this.failing = true;
    }
  }
}

/** True when the feed has finished work the coordinator has not taken. */
export const pending = (f: PartitionFeed): boolean =>
  f.committable !== undefined && (f.committed === undefined || f.committable > f.committed);
