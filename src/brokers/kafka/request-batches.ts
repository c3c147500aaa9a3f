import type { Consumer as KafkajsConsumer, EachBatchPayload } from 'kafkajs';
import type { InboundMessage } from '../../core/message.js';
import type { Logger } from '../../core/ports.js';
import { SESSION_CLOCK } from './batch-reader.js';
import { KafkaInbound } from './convert.js';

/** What {@link RequestBatches} works with: the member's parts it shares with its `KafkaConsumer`. */
export interface RequestBatchesParts {
  /** The requests topic (see `ConsumeRequest.requests`). */
  readonly topic: string;
  readonly handle: (partition: number, message: InboundMessage) => Promise<void>;
  readonly consumer: () => KafkajsConsumer | undefined;
  /** The partitions of the requests topic in the member's current assignment. */
  readonly owned: () => ReadonlySet<number>;
  readonly heartbeatIntervalMs: number;
  readonly log: Logger;
  /** True once the consumer is closing. */
  closing(): boolean;
  /** Waits, heartbeating, until the app's `onAssign` of this assignment settled (see `BatchReader`). */
  assigned(payload: EachBatchPayload): Promise<void>;
  /** Heartbeats; a rebalance seen revokes everything and throws to kafkajs, which rejoins (see `BatchReader`). */
  beat(heartbeat: () => Promise<void>): Promise<void>;
}

/**
 * kafkajs's eachBatch for the batches of a member's requests topic, which never go through `take()`: once
 * the app's `onAssign` settled, each message is handed to `handle` in offset order, and what was handled is
 * committed at once, directly (nothing is committed before its `handle` resolved). A `handle` that rejects
 * (its partition's shard is not here now: a rebalance is coming) ends the batch there, after a heartbeat
 * interval: the message is fetched again, here until the rebalance, then by the partition's next owner.
 */
export class RequestBatches {
  constructor(private readonly parts: RequestBatchesParts) {}

  async eachBatch(payload: EachBatchPayload): Promise<void> {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs's payload functions are closures
    const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
    const { parts } = this;
    await parts.assigned(payload);
    const partition = batch.partition;
    let handled: number | undefined;
    try {
      for (const record of batch.messages) {
        if (parts.closing() || !isRunning() || isStale() || !parts.owned().has(partition)) return;
        try {
          await parts.handle(partition, new KafkaInbound(parts.topic, partition, record));
        } catch (error) {
          parts.log.debug('a request was not handled; it is read again', { partition, offset: record.offset, error });
          await this.pause();
          return;
        }
        resolveOffset(record.offset);
        handled = Number(record.offset) + 1;
        await parts.beat(heartbeat);
      }
    } finally {
      if (handled !== undefined) await this.commit(partition, handled);
    }
  }

  /** Commits what was handled; one that fails is committed by a later batch (or handled again, at least once). */
  private async commit(partition: number, offset: number): Promise<void> {
    const consumer = this.parts.consumer();
    if (consumer === undefined) return;
    const offsets = [{ topic: this.parts.topic, partition, offset: String(offset) }];
    await consumer
      .commitOffsets(offsets)
      .catch((error: unknown) => this.parts.log.debug('requests commit not taken', { offsets, error }));
  }

  /** Waits one heartbeat interval (on the session's clock) before the batch is fetched again. */
  private pause(): Promise<void> {
    return new Promise((resolve) => SESSION_CLOCK.setTimer(this.parts.heartbeatIntervalMs, resolve));
  }
}
