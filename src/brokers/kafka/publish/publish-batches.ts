import type { Message, RecordMetadata } from 'kafkajs';
import { isRefusal } from './publishing.js';

/** Bytes of values and keys one batch carries at most (well under a topic's default `max.message.bytes`, 1 MiB). */
export const BATCH_BYTES = 256 * 1024;

/** Sends messages of one topic in one request (kafkajs's `producer.send`). */
export type SendMessages = (topic: string, messages: Message[]) => Promise<RecordMetadata[]>;

interface Waiting {
  readonly message: Message;
  readonly bytes: number;
  resolve(sent: RecordMetadata[]): void;
  reject(error: unknown): void;
}

interface Batch {
  readonly topic: string;
  readonly waiting: Waiting[];
}

/**
 * Publishes made in one turn of the event loop that land in one partition — pinned to it, or with the same
 * key — go to the broker together, in one produce request: each partition's messages in a request form one
 * record batch, which the broker appends or refuses whole. kafkajs sends each `send` on its own, and many
 * small concurrent publishes (routed `app.send`s, their replies) cost a request each. A message with no key
 * and no partition (the partitioner spreads those) goes on its own.
 *
 * A partition has one send in flight at a time: publishes made meanwhile gather into its next batch, sent
 * once the one in flight is answered. Two sends of kafkajs to one partition at once may reach the broker in
 * either order (the first to a topic, or after the metadata expired, refreshes it first), and publishes
 * made one after another must land in that order.
 *
 * A batch the broker refuses for good (a message in it too large, invalid) is sent again message by message,
 * so that each publish gets the answer to its own message: none of it was appended. Any other failure is
 * every publish's of the batch (it may pass on a later try, as a publish's may).
 */
export class PublishBatches {
  /** Batches waiting to be sent, by partition (see `groupOf`). */
  private readonly queued = new Map<string, Batch>();
  /** Partitions with a send in flight: their next batch waits for it. */
  private readonly sending = new Set<string>();
  private scheduled = false;

  constructor(private readonly send: SendMessages) {}

  /** Queues a message for the next batch of its partition; resolves with what its batch's send reported. */
  publish(topic: string, message: Message): Promise<RecordMetadata[]> {
    const group = groupOf(topic, message);
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

  /** Sends the batch of every partition that has no send in flight; the others go when theirs is answered. */
  private flush(): void {
    this.scheduled = false;
    for (const [group, batch] of this.queued) {
      if (this.sending.has(group)) continue;
      this.queued.delete(group);
      void this.sendBatch(group, batch);
    }
  }

  /** Sends a partition's batch, its pieces one after the other; then the batch that gathered meanwhile. */
  private async sendBatch(group: string, { topic, waiting }: Batch): Promise<void> {
    this.sending.add(group);
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
  private async sendPiece(topic: string, piece: Waiting[]): Promise<void> {
    try {
      const sent = await this.send(
        topic,
        piece.map((w) => w.message),
      );
      for (const w of piece) w.resolve(sent);
    } catch (error) {
      if (piece.length > 1 && isRefusal(error)) for (const w of piece) await this.sendPiece(topic, [w]);
      else for (const w of piece) w.reject(error);
    }
  }
}

/** The partition a message lands in, as a name: its pinned partition, else its key; undefined for neither. */
function groupOf(topic: string, message: Message): string | undefined {
  if (message.partition !== undefined) return `${topic}\0p${message.partition}`;
  const key = message.key;
  if (key === null || key === undefined) return undefined;
  return `${topic}\0k${typeof key === 'string' ? `s${key}` : `b${key.toString('base64')}`}`;
}

/** A batch's messages in pieces of at most `BATCH_BYTES` (one larger than that on its own), in order. */
function piecesOf(waiting: Waiting[]): Waiting[][] {
  const pieces: Waiting[][] = [];
  let piece: Waiting[] = [];
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
