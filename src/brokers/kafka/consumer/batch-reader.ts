import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import { SystemClock } from '../../../core/clock.js';
import type { Clock, ConsumeRequest, Logger } from '../../../core/ports.js';
import type { CrashRestarts } from './crash-restarts.js';
import { heartbeating, isRebalance } from './heartbeats.js';
import type { KafkaConsumerSettings } from '../options.js';
import type { OwnedPartitions } from './owned-partitions.js';
import type { PartitionEnds } from './partition-ends.js';
import type { PartitionFeed } from './partition-feed.js';

/** While a batch is held only for the work in flight, how often the partition's end is asked for. */
const POLL_MS = 100;

/**
 * The clock of the timers paced against deadlines the broker keeps in real time — heartbeats while a batch
 * is held or a revoke waits, and the polls for newer messages meanwhile: on a test's `ManualClock` they
 * would stop, and the group would drop this member. Every other timer of the consumer runs on the app's clock.
 */
export const SESSION_CLOCK: Clock = new SystemClock();

/** What a {@link BatchReader} works with: the member's parts it shares with its `KafkaConsumer`. */
export interface BatchReaderParts {
  readonly partitions: OwnedPartitions;
  readonly ends: PartitionEnds;
  readonly restarts: CrashRestarts;
  readonly request: ConsumeRequest;
  readonly settings: KafkaConsumerSettings;
  readonly log: Logger;
  /** True once the consumer is closing. */
  closing(): boolean;
  /** The app's `onAssign` of the latest assignment, while it runs: no batch is handed out before it settles. */
  assigning(): Promise<void> | undefined;
}

/**
 * kafkajs's eachBatch for one member. A batch is buffered and handed out by `take()` as the app has room;
 * its eachBatch call stays open until the app has taken all of it, and after that for as long as work of
 * the partition runs (retries waiting for their backoff aside) and the broker has nothing newer, heartbeating
 * meanwhile. That is the back-pressure (kafkajs fetches a partition again only after its batch returns) and
 * the revoke hook: work in flight nearly always sits under an open eachBatch, so a rebalance is seen by our
 * heartbeat, which revokes everything before kafkajs rejoins the group.
 */
export class BatchReader {
  constructor(private readonly parts: BatchReaderParts) {}

  /** Reads one batch; resolves once it may go (kafkajs then fetches the partition again). */
  async eachBatch(payload: EachBatchPayload): Promise<void> {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs's payload functions are closures
    const { batch, resolveOffset, heartbeat, isStale } = payload;
    await this.assigned(payload);
    const feed = await this.feedFor(batch.partition);
    if (feed === undefined) return;
    this.parts.restarts.batchArrived(); // kafkajs reads again
    // kafkajs's messages as they are: the feed wraps each one only when the app takes it.
    const messages = feed.admit(batch.messages, Number(batch.lastOffset()));
    this.parts.ends.seen(batch.partition, Number(batch.highWatermark));
    if (messages.length === 0) {
      feed.fetchedEnd = Number(batch.lastOffset()) + 1; // only control records, or what was finished before
    } else {
      await this.hold(feed, messages, payload);
      if (this.parts.closing() || feed.revoked || isStale()) return;
    }
    await this.beat(heartbeat);
    resolveOffset(batch.lastOffset());
  }

  /**
   * Waits, heartbeating, until the app's `onAssign` of this assignment settled (a paced subscriber restores
   * its shards there, however long that takes); a rebalance seen meanwhile revokes and throws (see `beat`).
   */
  async assigned(payload: EachBatchPayload): Promise<void> {
    const gate = this.parts.assigning();
    if (gate === undefined) return;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs's payload functions are closures
    const { heartbeat, isRunning, isStale } = payload;
    let settled = false;
    const done = gate.then(() => {
      settled = true;
    });
    while (!settled && !this.parts.closing() && isRunning() && !isStale()) {
      let timer: { cancel(): void } | undefined;
      const beatDue = new Promise<void>((resolve) => {
        timer = SESSION_CLOCK.setTimer(this.parts.settings.heartbeatIntervalMs, resolve);
      });
      await Promise.race([done, beatDue]);
      timer?.cancel();
      if (!settled) await this.beat(heartbeat);
    }
  }

  /** The feed a batch of `partition` goes to, or undefined when the batch is not to be read. */
  private async feedFor(partition: number): Promise<PartitionFeed | undefined> {
    const owned = this.parts.partitions;
    // A partition given back to this member while its revoke still runs: wait for the revoke, then read anew.
    while (owned.feed(partition)?.revoked && owned.revoking) await owned.revoking.catch(() => {});
    if (this.parts.closing() || !owned.assignment.has(partition)) return undefined;
    const feed = owned.feed(partition) ?? owned.open(partition);
    return feed.revoked ? undefined : feed;
  }

  /**
   * Hands `messages` out and holds the batch until the app has taken all of it: kafkajs fetches this
   * partition again only after, so nothing is read beyond what the app has room for (one batch of
   * read-ahead per partition). Once taken, it is still held while work of the partition runs and the broker
   * has nothing newer in any partition (kafkajs fetches again from a broker only once all its batches
   * returned; the ends are asked for every POLL_MS): so that work in flight has an open eachBatch whose
   * heartbeat sees a rebalance before kafkajs rejoins, and yet newer messages are fetched at once.
   */
  private async hold(feed: PartitionFeed, messages: KafkaMessage[], payload: EachBatchPayload): Promise<void> {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs's payload functions are closures
    const { heartbeat, isRunning, isStale } = payload;
    const { request, settings } = this.parts;
    const end = Number(messages[messages.length - 1]!.offset) + 1;
    feed.fetchedEnd = end;
    feed.append(messages);
    request.onReadable();
    const active = request.active?.bind(request);
    const taken = (): boolean => (feed.position ?? -1) >= end;
    const busy = (): boolean => !taken() || (active !== undefined && active(feed.partition) > 0 && !this.newer());
    while (!this.parts.closing() && !feed.revoked && isRunning() && !isStale() && busy()) {
      const caughtUp = taken();
      await feed.until(end, caughtUp ? Math.min(POLL_MS, settings.heartbeatIntervalMs) : settings.heartbeatIntervalMs);
      if (caughtUp && busy()) await this.refreshEnds();
      if (!busy()) break;
      await this.beat(heartbeat);
    }
  }

  /**
   * Heartbeats (when one is due: kafkajs sends at most one per interval) while a batch is held and as it
   * returns, so that kafkajs's own heartbeat right after finds one just sent and does not look: a rebalance
   * is seen here, where the revoke is waited for, and not by kafkajs, which would rejoin at once while work
   * still runs. Then it revokes everything and throws the rebalance to kafkajs, which rejoins.
   */
  async beat(heartbeat: () => Promise<void>): Promise<void> {
    try {
      await heartbeat();
    } catch (error) {
      // A heartbeat that failed otherwise (a slow coordinator, a timeout) is tried again next round; throwing
      // it would make kafkajs retry the whole batch with backoff, or crash the consumer.
      if (!isRebalance(error)) return this.parts.log.debug('heartbeat failed', { error });
      const { partitions, settings, log } = this.parts;
      await heartbeating(partitions.revokeAll(), heartbeat, settings, log, SESSION_CLOCK);
      throw error;
    }
  }

  /** True when an owned partition has messages that no batch brought yet. */
  private newer(): boolean {
    const owned = this.parts.partitions;
    return this.parts.ends.newer(owned.assignment, (q) => owned.feed(q)?.fetchedEnd);
  }

  /** Asks the broker how far the partitions go (and, for those no batch came from, where they are read from). */
  private refreshEnds(): Promise<void> {
    const owned = this.parts.partitions;
    return this.parts.ends.refresh([...owned.assignment].some((q) => owned.feed(q)?.fetchedEnd === undefined));
  }
}
