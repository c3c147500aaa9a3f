import type { Consumer as PkConsumer } from '@platformatic/kafka';
import { SystemClock } from '../../core/clock.js';
import type { Logger, Timer } from '../../core/ports.js';

const SYSTEM_CLOCK = new SystemClock();

/** What a {@link TopicGrowth} watches, and for whom. */
export interface Grown {
  readonly topic: string;
  /** The member's client consumer now (replaced when its stream fails), if any. */
  readonly consumer: () => PkConsumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** Whether a member of a classic group: it must join again for the leader to assign new partitions. */
  readonly classic: boolean;
  readonly closing: () => boolean;
  readonly log: Logger;
}

/**
 * The partition count of a member's topic, and partitions added while it is read: every `metadataMaxAgeMs` (in
 * real time) the topic's metadata is read again; when the topic has more partitions than it had, a member of a
 * classic group joins again, so that the leader (which finds them too) assigns them. Under the consumer
 * protocol the broker assigns them itself.
 */
export class TopicGrowth {
  /** The topic's partition count, as known now. */
  count = 0;
  /** A classic member found partitions added and has not yet joined again so the leader assigns them. */
  private grown = false;
  private timer: Timer | undefined;

  constructor(private readonly g: Grown) {}

  /** Starts watching, every `everyMs`. */
  watch(everyMs: number): void {
    this.every(everyMs);
  }

  /** A new client consumer joins: its join reads the topic's metadata afresh. */
  joining(): void {
    this.grown = false;
  }

  cancel(): void {
    this.timer?.cancel();
  }

  private every(ms: number): void {
    this.timer = SYSTEM_CLOCK.setTimer(ms, () => {
      if (this.g.closing()) return;
      this.every(ms);
      void this.recount().catch((error: unknown) => this.g.log.debug('reading the topic metadata failed', { error }));
    });
  }

  private async recount(): Promise<void> {
    const { topic, log } = this.g;
    const consumer = this.g.consumer();
    if (consumer === undefined) return;
    const count = (await consumer.metadata({ topics: [topic], forceUpdate: true })).topics.get(topic)?.partitionsCount;
    if (count === undefined || this.g.closing()) return;
    if (count > this.count) {
      log.info('the topic has new partitions', { partitions: count, had: this.count });
      this.count = count;
      this.grown = this.g.classic;
    }
    if (!this.grown || consumer !== this.g.consumer()) return;
    // A join that fails (the group rebalancing, the coordinator moving) is tried again at the next count: until
    // one succeeds, nobody may be reading the new partitions.
    try {
      await consumer.joinGroup();
      this.grown = false;
    } catch (error) {
      log.warn('joining again for the new partitions failed; trying again', { error });
    }
  }
}
