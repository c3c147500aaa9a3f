/** Bytes of values and keys one batch carries at most (well under a topic's default `max.message.bytes`, 1 MiB). */
export const BATCH_BYTES = 256 * 1024;

/** How many partitions a topic has, as last known; undefined when not known. */
export type PartitionCounts = (topic: string) => number | undefined;

/** A message to publish, as a client takes it: what placing it in a partition reads. */
export interface BatchMessage {
  readonly key?: string | Buffer | null;
  readonly value?: string | Buffer | null;
  readonly partition?: number;
}

/** What {@link PartitionBatches} asks of the client it sends through. */
export interface BatchingClient {
  /** The partition of `count` a message with `key` lands in, as the client's own partitioner places it. */
  readonly partitionOf: (key: string | Buffer, count: number) => number;
  /** True when the broker refused the messages themselves for good (too large, invalid): none was appended. */
  readonly refused: (error: unknown) => boolean;
}

interface Waiting<M, R> {
  readonly message: M;
  readonly bytes: number;
  resolve(sent: R): void;
  reject(error: unknown): void;
}

interface Batch<M, R> {
  readonly topic: string;
  readonly waiting: Waiting<M, R>[];
}

/**
 * Publishes made in one turn of the event loop that land in one partition go to the broker together, in one
 * produce request: each partition's messages in a request form one record batch, which the broker appends or
 * refuses whole. kafkajs sends each `send` on its own, and many small concurrent publishes (a subscriber's
 * results, routed `app.send`s, requests and their replies) would cost a request each.
 *
 * A message's partition is the one it is pinned to; else, where the topic's partition count is known, the one
 * its key hashes to (`partitionOf`, the client's own partitioner, which places it: the message is sent keyed, as
 * it was given); a
 * message with neither is pinned to the partition the topic's unkeyed messages stick to for the turn, the
 * next one each turn (as Java's sticky partitioner does), so that they too go in one batch. Where the count
 * is not known, a key stands for its partition, and a message with neither goes on its own.
 *
 * A partition has one send in flight at a time: publishes made meanwhile gather into its next batch, sent
 * once the one in flight is answered. Two sends of a client to one partition at once may reach the broker in
 * either order (the first to a topic, or after the metadata expired, refreshes it first), and publishes
 * made one after another must land in that order.
 *
 * A batch the broker refuses for good (a message in it too large, invalid) is sent again message by message,
 * so that each publish gets the answer to its own message: none of it was appended. Any other failure is
 * every publish's of the batch (it may pass on a later try, as a publish's may).
 */
export class PartitionBatches<M extends BatchMessage, R> {
  /** Batches waiting to be sent, by partition (see `groupOf`). */
  private readonly queued = new Map<string, Batch<M, R>>();
  /** Partitions with a send in flight: their next batch waits for it. */
  private readonly sending = new Set<string>();
  private scheduled = false;
  /** Per topic, the partition its unkeyed messages go to this turn. */
  private readonly sticky = new Map<string, number>();
  /** Per topic, the partition its unkeyed messages went to last. */
  private readonly lastSticky = new Map<string, number>();

  /**
   * @param send - sends one batch.
   * @param partitions - the partition count of a topic, as last known (none: a key stands for its partition).
   * @param client - the client's partitioner, and which failures are refusals of the messages themselves.
   */
  constructor(
    private readonly send: (topic: string, messages: M[]) => Promise<R>,
    private readonly partitions: PartitionCounts,
    private readonly client: BatchingClient,
  ) {}

  /** Queues a message for the next batch of its partition; resolves with what its batch's send reported. */
  publish(topic: string, given: M): Promise<R> {
    const message = this.placed(topic, given);
    const group = groupOf(topic, message, this.partitions(topic), this.client.partitionOf);
    if (group === undefined) return this.send(topic, [message]);
    return new Promise((resolve, reject) => {
      const bytes = (message.value?.length ?? 0) + (message.key?.length ?? 0);
      let batch = this.queued.get(group);
      if (batch === undefined) this.queued.set(group, (batch = { topic, waiting: [] }));
      batch.waiting.push({ message, bytes, resolve, reject });
      if (!this.scheduled && !this.sending.has(group)) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** The message, pinned to the partition of the turn for unkeyed messages when it has neither key nor partition. */
  private placed(topic: string, message: M): M {
    if (message.partition !== undefined || (message.key !== null && message.key !== undefined)) return message;
    const count = this.partitions(topic);
    if (count === undefined || count < 1) return message;
    let partition = this.sticky.get(topic);
    if (partition === undefined) {
      partition = ((this.lastSticky.get(topic) ?? -1) + 1) % count;
      this.sticky.set(topic, partition);
      this.lastSticky.set(topic, partition);
    }
    return { ...message, partition };
  }

  /** Sends the batch of every partition that has no send in flight; the others go when theirs is answered. */
  private flush(): void {
    this.scheduled = false;
    this.sticky.clear();
    for (const [group, batch] of this.queued) {
      if (this.sending.has(group)) continue;
      this.queued.delete(group);
      void this.sendBatch(group, batch);
    }
  }

  /** Sends a partition's batch, its pieces one after the other; then the batch that gathered meanwhile. */
  private async sendBatch(group: string, { topic, waiting }: Batch<M, R>): Promise<void> {
    this.sending.add(group);
    this.sticky.delete(topic); // the topic's next unkeyed messages go to its next partition
    try {
      for (const piece of piecesOf(waiting)) await this.sendPiece(topic, piece);
    } finally {
      this.sending.delete(group);
      const next = this.queued.get(group);
      if (next !== undefined) {
        this.queued.delete(group);
        void this.sendBatch(group, next);
      }
    }
  }

  /** Sends a piece; a piece refused for good is sent again message by message, in order. Never rejects. */
  private async sendPiece(topic: string, piece: Waiting<M, R>[]): Promise<void> {
    try {
      const sent = await this.send(
        topic,
        piece.map((w) => w.message),
      );
      for (const w of piece) w.resolve(sent);
    } catch (error) {
      if (piece.length > 1 && this.client.refused(error)) for (const w of piece) await this.sendPiece(topic, [w]);
      else for (const w of piece) w.reject(error);
    }
  }
}

/**
 * The partition a message lands in, as a name: its pinned partition, else its key's (its key itself where the
 * count is not known); undefined for neither.
 */
function groupOf(
  topic: string,
  message: BatchMessage,
  count: number | undefined,
  partitionOf: BatchingClient['partitionOf'],
): string | undefined {
  if (message.partition !== undefined) return `${topic}\0p${message.partition}`;
  const key = message.key;
  if (key === null || key === undefined) return undefined;
  if (count !== undefined && count > 0) return `${topic}\0p${partitionOf(key, count)}`;
  return `${topic}\0k${typeof key === 'string' ? `s${key}` : `b${key.toString('base64')}`}`;
}

/** A batch's messages in pieces of at most `BATCH_BYTES` (one larger than that on its own), in order. */
function piecesOf<W extends { readonly bytes: number }>(waiting: W[]): W[][] {
  const pieces: W[][] = [];
  let piece: W[] = [];
  let bytes = 0;
  for (const w of waiting) {
    if (piece.length > 0 && bytes + w.bytes > BATCH_BYTES) {
      pieces.push(piece);
      piece = [];
      bytes = 0;
    }
    piece.push(w);
    bytes += w.bytes;
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}
