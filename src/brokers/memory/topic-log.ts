import { SluiceError } from '../../core/errors.js';
import { PARTITION_KEY_HEADER, encodeValue, type Headers, type InboundMessage, type PublishOptions } from '../../core/message.js';

/** A topic in memory: a fixed number of append-only partitions, offsets from 0 without gaps. */
export class TopicLog {
  readonly partitions: InboundMessage[][];
  private nextKeyless = 0;

  constructor(
    readonly name: string,
    partitionCount: number,
  ) {
    this.partitions = Array.from({ length: partitionCount }, () => []);
  }

  /** Appends a message; the key picks the partition (so one key keeps its order), keyless ones rotate. */
  append(value: unknown, options: PublishOptions | undefined, timestamp: number): InboundMessage {
    const key = options?.key;
    let headers: Headers = options?.headers ?? {};
    if (key !== undefined) headers = { ...headers, [PARTITION_KEY_HEADER]: key };
    const partition = options?.partition ?? this.partitionFor(key ?? headers[PARTITION_KEY_HEADER]);
    const log = this.partitions[partition];
    if (log === undefined) throw new SluiceError('CONFIG_INVALID', `publish to "${this.name}": partition must be an integer from 0 to ${this.partitions.length - 1}, got ${String(partition)}`);
    const message: InboundMessage = {
      topic: this.name,
      partition,
      offset: log.length,
      key: key ?? headers[PARTITION_KEY_HEADER],
      headers,
      value: encodeValue(value),
      timestamp,
    };
    log.push(message);
    return message;
  }

  endOffset(partition: number): number {
    return this.partitions[partition]?.length ?? 0;
  }

  private partitionFor(key: string | undefined): number {
    const n = this.partitions.length;
    if (key === undefined) return this.nextKeyless++ % n;
    // A Java-style string hash (Kafka uses murmur2; what matters is that one key keeps one partition).
    let h = 0;
    for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
    return (h >>> 0) % n;
  }
}
