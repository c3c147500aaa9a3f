import { SluiceError, show } from '../../core/errors.js';
import { utf8, type InboundMessage, type PublishOptions } from '../../core/message.js';
import type {
  Broker,
  BrokerServer,
  ConsumeRequest,
  Consumer,
  InputTransactions,
  StagedMessage,
} from '../../core/ports.js';
import { GroupTopic } from './group.js';
import { MemoryConsumer } from './memory-consumer.js';
import { MemoryTransactions } from './memory-transactions.js';
import { TopicLog, keyPartition } from './topic-log.js';

/**
 * Settings of a {@link MemoryBroker}.
 *
 * @category Brokers
 */
export interface MemoryBrokerOptions {
  /**
   * Partitions of a topic created on first use.
   * @default 1
   */
  partitions?: number;
  /** Partitions per topic, overriding `partitions` for the topics named: `{ orders: 4 }`. */
  topics?: Readonly<Record<string, number>>;
  /**
   * The time stamped on messages, in milliseconds since the epoch; tests pass `() => clock.now()`. @default Date.now
   */
  now?: () => number;
  /**
   * The largest message a topic takes: its value, key and headers (names and values), in bytes. A larger one
   * is refused with `PUBLISH_REFUSED`, as Kafka refuses one over `max.message.bytes`. @default `undefined`: no limit
   */
  maxMessageBytes?: number;
}

/**
 * A real broker in miniature, in memory: topics with partitions and offsets, consumer groups (every
 * group sees every message; members of one group share the partitions, rebalanced eagerly), commits, and
 * redelivery of what was not committed when a partition changes hands. Topics are created on first use.
 *
 * It is a product feature, not a mock: the app drives it through the same dispatch, watermark and
 * back-pressure code as Kafka. The inspection methods (`messages`, `values`, `committed`, `readCount`)
 * are for tests.
 *
 * @example
 * ```ts
 * const broker = new MemoryBroker({ partitions: 2 });
 * const app = new App({ name: 'billing' }).withBroker(broker, (b) => b.include(Billing));
 * await app.start();
 * await broker.publish('orders', { id: 'o1' }, { key: 'cust-1' });
 * await app.idle();
 * broker.values('orders.dlq'); // what was dead-lettered
 * broker.committed('billing', 'orders'); // the group's next offset, per partition
 * ```
 *
 * @category Brokers
 */
export class MemoryBroker implements Broker {
  /** `'memory'`. */
  readonly kind = 'memory';

  /** In the app's process: host `localhost`, protocol `memory`. */
  server(): BrokerServer {
    return { host: 'localhost', protocol: 'memory' };
  }
  private readonly topicLogs = new Map<string, TopicLog>();
  private readonly groups = new Map<string, GroupTopic>();
  private readonly defaultPartitions: number;
  /** `options.topics`, checked and copied at construction. */
  private readonly topicPartitions = new Map<string, number>();
  private readonly now: () => number;
  private readonly maxMessageBytes: number | undefined;

  /**
   * A broker with no topics yet; each is created on first use (or by {@link MemoryBroker.createTopic}).
   *
   * @param options - partition counts, the clock of message timestamps, a size limit.
   * @throws {@link SluiceError} `CONFIG_INVALID` when `partitions`, a count in `topics` or `maxMessageBytes`
   *   is not a positive integer, or `now` is not a function.
   */
  constructor(options: MemoryBrokerOptions = {}) {
    if (options === null || typeof options !== 'object')
      throw new SluiceError('CONFIG_INVALID', `MemoryBroker: options must be an object, got ${show(options)}`);
    this.defaultPartitions = checkCount('MemoryBroker: partitions', options.partitions ?? 1);
    const topics = options.topics;
    if (topics !== undefined) {
      if (topics === null || typeof topics !== 'object' || Array.isArray(topics)) {
        throw new SluiceError(
          'CONFIG_INVALID',
          `MemoryBroker: topics must be an object { [topic]: partitions }, got ${show(topics)}`,
        );
      }
      for (const [name, n] of Object.entries(topics))
        this.topicPartitions.set(name, checkCount(`MemoryBroker: topics[${show(name)}]`, n));
    }
    if (options.now !== undefined && typeof options.now !== 'function')
      throw new SluiceError('CONFIG_INVALID', `MemoryBroker: now must be a function, got ${show(options.now)}`);
    this.now = options.now ?? Date.now;
    if (options.maxMessageBytes !== undefined)
      this.maxMessageBytes = checkCount('MemoryBroker: maxMessageBytes', options.maxMessageBytes);
  }

  /**
   * Does nothing: there is nothing to connect to. It takes no logger or clock from the app either: it logs
   * nothing and sets no timers, and stamps messages with `options.now`, which several apps sharing it agree on.
   */
  async connect(): Promise<void> {}

  /**
   * Nothing to release: each subscription closes its own consumer when its app stops, and the data stays,
   * so that several apps (or an app restarted in a test) can share one broker, as they would share Kafka.
   */
  async close(): Promise<void> {}

  /**
   * Appends a message: a `Uint8Array` as it is (copied), a string as UTF-8 text, anything else as JSON.
   * A keyed message lands in the partition its key picks, and its key is also kept in header
   * `partition-key`; a keyless one rotates over the partitions; `options.partition` pins one.
   *
   * @throws {@link SluiceError} (as a rejection) `CONFIG_INVALID` for an empty topic, a `partition` that is
   *   not an integer partition of the topic, a `key` that is neither text nor bytes, or `headers` that are
   *   not text, bytes or null (or arrays of them); `PUBLISH_REFUSED` for a message over `maxMessageBytes`.
   */
  async publish(topic: string, value: unknown, options?: PublishOptions): Promise<void> {
    this.publishNow(topic, value, options);
  }

  /**
   * The synchronous form of {@link MemoryBroker.publish}: returns the stored message (its partition,
   * offset and timestamp). Throws what `publish` rejects with.
   */
  publishNow(topic: string, value: unknown, options?: PublishOptions): InboundMessage {
    checkPublish(topic, options, this.partitionsOf(topic));
    const message = this.topic(topic).append(value, options, this.now());
    this.appended(message);
    return message;
  }

  /** How many partitions `topic` has, or will have once used. */
  private partitionsOf(topic: string): number {
    return this.topicLogs.get(topic)?.partitions.length ?? this.topicPartitions.get(topic) ?? this.defaultPartitions;
  }

  /** Tells the readers of a message's topic that it is there. */
  private appended(message: InboundMessage): void {
    for (const g of this.groups.values()) {
      if (g.log.name !== message.topic) continue;
      for (const m of g.members) m.notifyAppended(message.partition);
      for (const r of g.requestReaders) r.requestArrived(message.partition);
    }
  }

  /**
   * The transactions of `group` over `topic`'s partitions (see {@link Broker.transactions}): a commit appends
   * its messages and commits the group's offset at once, or, if one message is refused, does neither;
   * opening a partition fences its earlier holder's transactions.
   */
  transactions(group: string, topic: string): InputTransactions {
    return new MemoryTransactions(this.group(group, topic), (messages) => this.publishAll(messages));
  }

  /**
   * Appends every message or, when one is refused, none (the partitions are cut back to where they were):
   * what a transaction publishes, and a memory store made with `publishesTo` this broker.
   *
   * @throws {@link SluiceError} as `publish` rejects for a message it refuses.
   */
  publishAll(messages: readonly StagedMessage[]): void {
    const before = new Map<TopicLog, number[]>();
    const stored: InboundMessage[] = [];
    try {
      for (const { topic, value, options } of messages) {
        checkPublish(topic, options, this.partitionsOf(topic));
        const log = this.topic(topic);
        if (!before.has(log))
          before.set(
            log,
            log.partitions.map((p) => p.length),
          );
        stored.push(log.append(value, options, this.now()));
      }
    } catch (error) {
      for (const [log, lengths] of before) lengths.forEach((n, p) => (log.partitions[p]!.length = n));
      throw error;
    }
    for (const message of stored) this.appended(message);
  }

  /**
   * Joins `request.group` for `request.topic` (creating the topic on first use). The group rebalances
   * eagerly: every member gives up its partitions, after its subscription settled and committed them, and
   * they are dealt out again round robin. A member's `request.requests` topic is read beside, partition p
   * by the owner of partition p (created, on first use, with as many partitions as the topic). The app
   * calls it; tests rarely need to.
   */
  async consume(request: ConsumeRequest): Promise<Consumer> {
    const known = this.groups.has(`${request.group}\u0000${request.topic}`);
    const group = this.group(request.group, request.topic);
    const ends = this.endOffsets(request.topic);
    if (!known && request.fromEnd === true) group.committed.splice(0, Infinity, ...ends);
    const named = request.requests?.topic;
    // A requests topic created here is co-partitioned with the topic.
    if (named !== undefined && !this.topicLogs.has(named))
      await this.createTopic(named, this.topic(request.topic).partitions.length);
    const requests = named === undefined ? undefined : this.group(request.group, named);
    const forget = request.forgetOnClose === true ? () => this.forgetGroup(request.group) : undefined;
    const consumer = new MemoryConsumer(group, request, requests, forget);
    await group.join(consumer);
    return consumer;
  }

  /** Deletes a group left by every member, with its offsets (`ConsumeRequest.forgetOnClose`). */
  private forgetGroup(group: string): void {
    for (const [id, g] of this.groups) if (g.group === group && g.members.length === 0) this.groups.delete(id);
  }

  /** The consumer groups the broker knows: joined once, and not deleted since. */
  groupNames(): string[] {
    return [...new Set([...this.groups.values()].map((g) => g.group))];
  }

  /** The group's state for `topic` (creating both on first use). */
  private group(group: string, topic: string): GroupTopic {
    const id = `${group}\u0000${topic}`;
    let g = this.groups.get(id);
    if (!g) this.groups.set(id, (g = new GroupTopic(group, this.topic(topic))));
    return g;
  }

  /** The partition of `partitions` that a message with `key` lands in, as `publish` picks it. */
  partitionOf(key: string, partitions: number): number {
    return keyPartition(key, partitions);
  }

  /** How many partitions `topic` has (creating it on first use, as `consume` does). */
  async partitionCount(topic: string): Promise<number> {
    return this.topic(topic).partitions.length;
  }

  /**
   * Creates a topic with `partitions` partitions; an existing topic is left as it is.
   *
   * @throws {@link SluiceError} (as a rejection) `CONFIG_INVALID` when `partitions` is not a positive integer.
   */
  async createTopic(name: string, partitions: number): Promise<void> {
    checkCount(`MemoryBroker.createTopic(${show(name)}): partitions`, partitions);
    if (!this.topicLogs.has(name)) this.topicLogs.set(name, new TopicLog(name, partitions, this.maxMessageBytes));
  }

  /** Every message of a topic, partition by partition, in offset order. */
  messages(topic: string): InboundMessage[] {
    return this.topicLogs.get(topic)?.partitions.flat() ?? [];
  }

  /**
   * The values of a topic's messages, in the order of {@link MemoryBroker.messages}, decoded as JSON (or
   * as text where they are not JSON).
   */
  values<T = unknown>(topic: string): T[] {
    return this.messages(topic).map((m) => decodeForInspection(m.value) as T);
  }

  /** The names of the topics that exist. */
  topics(): string[] {
    return [...this.topicLogs.keys()];
  }

  /**
   * The group's committed offset per partition of a topic (the next offset it will read), 0 where nothing
   * was committed. Creates the topic if it does not exist.
   */
  committed(group: string, topic: string): number[] {
    return [
      ...(this.groups.get(`${group}\u0000${topic}`)?.committed ??
        new Array<number>(this.topic(topic).partitions.length).fill(0)),
    ];
  }

  /** How many messages of a topic the group's members have taken so far, redeliveries included. */
  readCount(group: string, topic: string): number {
    return this.groups.get(`${group}\u0000${topic}`)?.readCount ?? 0;
  }

  /** See {@link Broker.readTopic}. */
  async readTopic(
    topic: string,
    partition: number,
    from: number,
    visit: (message: InboundMessage) => boolean,
  ): Promise<void> {
    const log = this.topicLogs.get(topic)?.partitions[partition];
    if (log === undefined) return;
    const end = log.length;
    for (let offset = Math.max(0, from); offset < end; offset++) if (!visit(log[offset]!)) return;
  }

  /**
   * The end offset of each partition of a topic: how many messages each holds. Creates the topic if it does not exist.
   */
  endOffsets(topic: string): number[] {
    return this.topic(topic).partitions.map((p) => p.length);
  }

  private topic(name: string): TopicLog {
    let log = this.topicLogs.get(name);
    if (!log)
      this.topicLogs.set(
        name,
        (log = new TopicLog(name, this.topicPartitions.get(name) ?? this.defaultPartitions, this.maxMessageBytes)),
      );
    return log;
  }
}

/**
 * A publish's topic and options, checked before anything is stored: a message that no consumer could be
 * handed (a partition given as a string, a key that is neither text nor bytes) is refused, not kept.
 */
function checkPublish(topic: unknown, options: PublishOptions | undefined, partitions: number): void {
  const who = `MemoryBroker.publish(${show(topic)})`;
  if (typeof topic !== 'string' || topic === '')
    throw new SluiceError(
      'CONFIG_INVALID',
      `MemoryBroker.publish: topic must be a non-empty string, got ${show(topic)}`,
    );
  if (options === undefined) return;
  if (options === null || typeof options !== 'object')
    throw new SluiceError('CONFIG_INVALID', `${who}: options must be an object, got ${show(options)}`);
  const { key, headers, partition, tombstone } = options;
  if (key !== undefined && typeof key !== 'string' && !(key instanceof Uint8Array))
    throw new SluiceError('CONFIG_INVALID', `${who}: key must be a string or bytes, got ${show(key)}`);
  const headerValue = (v: unknown): boolean => v === null || typeof v === 'string' || v instanceof Uint8Array;
  if (
    headers !== undefined &&
    (headers === null ||
      typeof headers !== 'object' ||
      Array.isArray(headers) ||
      !Object.values(headers).every((v) => headerValue(v) || (Array.isArray(v) && v.every(headerValue))))
  ) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: headers must be an object of text, bytes or null values (or arrays of them), got ${show(headers)}`,
    );
  }
  if (
    partition !== undefined &&
    !(typeof partition === 'number' && Number.isInteger(partition) && partition >= 0 && partition < partitions)
  ) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: partition must be an integer from 0 to ${partitions - 1}, got ${show(partition)}`,
    );
  }
  if (tombstone !== undefined && typeof tombstone !== 'boolean')
    throw new SluiceError('CONFIG_INVALID', `${who}: tombstone must be a boolean, got ${show(tombstone)}`);
}

/** A count (partitions, bytes) is a positive integer; `field` names the setting in the error. */
function checkCount(field: string, n: unknown): number {
  if (typeof n === 'number' && Number.isInteger(n) && n >= 1) return n;
  throw new SluiceError('CONFIG_INVALID', `${field} must be a positive integer, got ${show(n)}`);
}

function decodeForInspection(bytes: Uint8Array): unknown {
  const text = utf8(bytes);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
