import type { Consumer as KafkajsConsumer, EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { InboundMessage } from '../../../core/message.js';
import type { Logger } from '../../../core/ports.js';
import { SESSION_CLOCK } from './batch-reader.js';
import { KafkaInbound } from '../convert.js';

/** Requests handed to `handle` at once at most: a larger fetched batch is handled in runs of this many. */
export const REQUESTS_PER_RUN = 500;

/** What {@link RequestBatches} works with: the member's parts it shares with its `KafkaConsumer`. */
export interface RequestBatchesParts {
  /** The requests topic (see `ConsumeRequest.requests`). */
  readonly topic: string;
  /** Handles a run of a partition's messages; resolves with how many of them, from the first, were handled. */
  readonly handle: (partition: number, messages: readonly InboundMessage[]) => Promise<number>;
  readonly consumer: () => KafkajsConsumer | undefined;
  /** The partitions of the requests topic in the member's current assignment. */
  readonly owned: () => ReadonlySet<number>;
  readonly heartbeatIntervalMs: number;
  /** Messages handed to `handle` at once at most. @default {@link REQUESTS_PER_RUN} */
  readonly perRun?: number;
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
 * the app's `onAssign` settled, the batch's messages are handed to `handle` together (in runs of at most
 * `perRun`, a heartbeat between two), and what was handled is committed once, directly, when the batch
 * ends (nothing is committed before its `handle` resolved). Messages `handle` did not handle (their
 * partition's shard is not here now: a rebalance is coming) end the batch there, after a heartbeat
 * interval: they are fetched again, here until the rebalance, then by the partition's next owner.
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
      for (let from = 0; from < batch.messages.length;) {
        if (parts.closing() || !isRunning() || isStale() || !parts.owned().has(partition)) return;
        const records = batch.messages.slice(from, from + (parts.perRun ?? REQUESTS_PER_RUN));
        const n = await this.handle(partition, records);
        if (n > 0) {
          resolveOffset(records[n - 1]!.offset);
          handled = Number(records[n - 1]!.offset) + 1;
        }
        if (n < records.length) return await this.pause();
        from += n;
        await parts.beat(heartbeat);
      }
    } finally {
      if (handled !== undefined) await this.commit(partition, handled);
    }
  }

  /** Hands a run of records to `handle`: how many of them, from the first, were handled (0 when it rejects). */
  private async handle(partition: number, records: KafkaMessage[]): Promise<number> {
    const { topic, log } = this.parts;
    let n: number;
    try {
      const handled = await this.parts.handle(
        partition,
        records.map((r) => new KafkaInbound(topic, partition, r)),
      );
      n = Math.max(0, Math.min(records.length, Math.floor(handled)));
    } catch (error) {
      log.debug('requests were not handled; they are read again', { partition, offset: records[0]!.offset, error });
      return 0;
    }
    if (n < records.length)
      log.debug('requests were not handled; they are read again', { partition, offset: records[n]!.offset });
    return n;
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
