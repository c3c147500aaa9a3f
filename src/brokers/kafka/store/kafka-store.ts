import { SluiceError, show } from '../../../core/errors.js';
import { jsonLogger } from '../../../core/logger.js';
import type { Logger, ShardLog, Store, StoreObserver, StoreOwner } from '../../../core/ports.js';
import { KafkaShardLog } from './kafka-shard-log.js';
import type { StoreClient, StoreTopic } from './store-client.js';

/**
 * Settings of a Kafka store, on either client (`kafkaStore`, `platformaticKafkaStore`).
 *
 * @category Store
 */
export interface KafkaStoreSettings {
  /** Bootstrap servers, `host:port`: at least one. */
  brokers: string[];
  /**
   * Names the store's topics, `<prefix>.changelog` and `<prefix>.snapshots`, and its shards' transactional
   * ids, `<prefix>.shard-<n>`: one prefix per app (two apps sharing one would fence each other). Letters,
   * digits, `.`, `_` and `-`, at most 200 characters.
   * @default `<app>.<subscriber>`: the names of the app that opens the store and of its paced subscriber
   *   (`<app>.pace` for a store of `ownership: 'all'` that serves several)
   */
  prefix?: string;
  /**
   * Shard logs: the partitions of each topic. Fixed for the life of the topics: opening with another count
   * throws `CONFIG_INVALID`. @default 4
   */
  shards?: number;
  /** Replicas of each partition of the topics the store creates. @default 3 */
  replicationFactor?: number;
  /**
   * `min.insync.replicas` of the topics the store creates: a transaction commits only once this many
   * replicas have its records. @default 2 (1 when `replicationFactor` is 1)
   */
  minInsyncReplicas?: number;
  /**
   * The most bytes one produce request carries: a record or snapshot longer than this is written as several
   * messages. Below the topics' `max.message.bytes` (the store sets it to this on the topics it creates) and
   * the broker's `message.max.bytes` (1,048,588 by default). An integer from 65,536. @default 1_000_000
   */
  maxMessageBytes?: number;
  /** A shard's state is snapshotted after this many records (see `fileStore`). @default the host's (10_000) */
  snapshotEvery?: number;
  /**
   * `partition`: shard p goes with partition p of the paced subscriber's topic, to whichever instance of the
   * app the consumer group gives it (`open()` takes no shard; the app opens each as it is assigned, fencing
   * the instance that had it). `all`: `open()` takes every shard, for an app that runs as one process.
   * @default 'partition'
   */
  ownership?: 'all' | 'partition';
  /** Where the client's own warnings and errors go. @default `jsonLogger()` */
  logger?: Logger;
}

/** The changelog and snapshots topics of a store with `prefix`. */
export const storeTopics = (prefix: string): { changelog: string; snapshots: string } => ({
  changelog: `${prefix}.changelog`,
  snapshots: `${prefix}.snapshots`,
});

const failed = (what: string, field: string, value: unknown, expected: string): never => {
  throw new SluiceError('CONFIG_INVALID', `${what}: ${field} must be ${expected}, got ${show(value)}`);
};
const isPrefix = (p: unknown): p is string => typeof p === 'string' && /^[A-Za-z0-9._-]{1,200}$/.test(p);
const isInt = (n: unknown, min: number): n is number => typeof n === 'number' && Number.isInteger(n) && n >= min;

/**
 * The Kafka store (see `kafkaStore`), on whichever client `client` makes: the topics, the shards' logs and who
 * owns them. `what` names the store in errors: `kafkaStore`, `platformaticKafkaStore`.
 */
export class KafkaStore implements Store {
  readonly shards: number;
  readonly ownership: 'all' | 'partition';
  readonly snapshotEvery: number | undefined;
  /** A record's outputs go in its shard's transaction (see `Store.publishes`). */
  readonly publishes = true;
  private readonly client: StoreClient;
  /** The shards open here: every one (`all`), or those opened and not closed (`partition`). */
  private readonly logs: (KafkaShardLog | undefined)[];
  private logger: Logger;
  private readonly replicationFactor: number;
  private readonly minInsyncReplicas: number;
  private readonly maxMessageBytes: number;
  /** Known once the store is opened (`options.prefix`, or named after the app that opens it). */
  private prefix: string | undefined;
  private topics: { changelog: string; snapshots: string } = { changelog: '', snapshots: '' };
  /** Under ownership `partition`, once opened: the topics that route `app.send` to a key's owner. */
  routes: { readonly requests: string; readonly replies: string } | undefined;
  private readonly baseLogger: Logger;
  private opened = false;
  /** Given to each shard's log as it is made (see `Store.observe`). */
  private observer: StoreObserver | undefined;

  constructor(
    private readonly what: string,
    private readonly options: KafkaStoreSettings,
    client: (logger: () => Logger) => StoreClient,
  ) {
    const o = (options ?? {}) as Partial<KafkaStoreSettings>;
    const fail = (field: string, value: unknown, expected: string): never => failed(what, field, value, expected);
    if (!Array.isArray(o.brokers) || o.brokers.length === 0 || !o.brokers.every((b) => typeof b === 'string'))
      fail('brokers', o.brokers, 'a list of at least one host:port');
    if (o.prefix !== undefined && !isPrefix(o.prefix))
      fail('prefix', o.prefix, 'letters, digits, ".", "_" and "-" (1 to 200 of them)');
    const shards = o.shards ?? 4;
    if (!isInt(shards, 1)) fail('shards', shards, 'a positive integer');
    const rf = o.replicationFactor ?? 3;
    if (!isInt(rf, 1)) fail('replicationFactor', rf, 'a positive integer');
    const isr = o.minInsyncReplicas ?? Math.min(2, rf);
    if (!isInt(isr, 1) || isr > rf) fail('minInsyncReplicas', isr, `an integer from 1 to replicationFactor (${rf})`);
    const maxBytes = o.maxMessageBytes ?? 1_000_000;
    if (!isInt(maxBytes, 65_536)) fail('maxMessageBytes', maxBytes, 'an integer >= 65536');
    const ownership = o.ownership ?? 'partition';
    if (ownership !== 'all' && ownership !== 'partition') fail('ownership', o.ownership, "'all' or 'partition'");
    const every = o.snapshotEvery;
    if (every !== undefined && !isInt(every, 1)) fail('snapshotEvery', every, 'a positive integer');
    this.shards = shards;
    this.ownership = ownership;
    this.snapshotEvery = every;
    this.replicationFactor = rf;
    this.minInsyncReplicas = isr;
    this.maxMessageBytes = maxBytes;
    this.baseLogger = (options.logger ?? jsonLogger()).child({ store: 'kafka' });
    this.logger = this.baseLogger;
    this.client = client(() => this.logger);
    this.logs = new Array<KafkaShardLog | undefined>(shards).fill(undefined);
  }

  observe(observer: StoreObserver): void {
    this.observer = observer;
    for (const log of this.logs) if (log) log.observer = observer;
  }

  private makeLog(shard: number): KafkaShardLog {
    const log = new KafkaShardLog({
      client: this.client,
      shard,
      ...this.topics,
      transactionalId: `${this.prefix!}.shard-${shard}`,
      maxMessageBytes: this.maxMessageBytes,
      log: this.logger,
    });
    log.observer = this.observer;
    return log;
  }

  /**
   * Creates the topics if they are missing, then opens every shard (fencing their previous owners).
   *
   * @throws {@link sluice!SluiceError | SluiceError} `CONFIG_INVALID` when a topic has another partition count than
   *   `shards`; `STORE_CORRUPT` when a shard's snapshot does not read or records are missing.
   */
  async open(owner?: StoreOwner): Promise<void> {
    this.name(owner);
    await this.client.connect();
    try {
      await this.ensureTopics();
      if (this.ownership === 'all')
        for (let shard = 0; shard < this.shards; shard++) this.logs[shard] = this.makeLog(shard);
      const opened = await Promise.allSettled(this.openLogs().map((l) => l.open()));
      const failed = opened.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    } catch (error) {
      await Promise.allSettled(this.openLogs().map((l) => l.close()));
      await this.client.close();
      throw error;
    }
    this.opened = true;
  }

  /** The ID of the cluster that holds the store's topics (the store must be open). */
  async clusterId(): Promise<string> {
    if (!this.opened) throw new SluiceError('APP_STATE', `${this.what}: the cluster is known once the store is open`);
    return this.client.clusterId();
  }

  log(shard: number): ShardLog {
    this.check(shard);
    const log = this.logs[shard];
    if (!log)
      throw new SluiceError('SHARD_NOT_OWNED', `${this.what}: shard ${shard} is not open here (openShard takes it)`);
    return log;
  }

  /** Takes shard `shard`: its producer fences the last owner, then its snapshot and records are read. */
  async openShard(shard: number): Promise<ShardLog> {
    this.check(shard);
    if (!this.opened) throw new SluiceError('APP_STATE', `${this.what}: open() the store before openShard(${shard})`);
    await this.closeShard(shard); // a shard opened twice here: the first log goes first
    const log = this.makeLog(shard);
    try {
      await log.open();
    } catch (error) {
      await log.close().catch(() => {});
      throw error;
    }
    this.logs[shard] = log;
    return log;
  }

  /** Lets shard `shard` go: waits for its appends and snapshot under way, then closes its producer. */
  async closeShard(shard: number): Promise<void> {
    this.check(shard);
    const log = this.logs[shard];
    if (this.ownership === 'partition') this.logs[shard] = undefined;
    await log?.close();
  }

  /** Waits for each shard's appends and snapshot under way, then disconnects. */
  async close(): Promise<void> {
    const open = this.openLogs();
    if (this.ownership === 'partition') this.logs.fill(undefined);
    await Promise.all(open.map((l) => l.close()));
    if (this.opened) await this.client.close();
    this.opened = false;
  }

  /** The logs open here. */
  private openLogs(): KafkaShardLog[] {
    return this.logs.filter((l): l is KafkaShardLog => l !== undefined);
  }

  private check(shard: number): void {
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.shards)
      throw new RangeError(`${this.what}: no shard ${shard} (it has ${this.shards})`);
  }

  /** Fixes the prefix (the options', or `<app>.<subscriber>` of the app that opens the store) and the topics. */
  private name(owner: StoreOwner | undefined): void {
    const subs = owner?.subscribers ?? [];
    const named = owner === undefined ? undefined : `${owner.app}.${subs.length === 1 ? subs[0] : 'pace'}`;
    const prefix = this.options.prefix ?? named;
    if (prefix === undefined)
      throw new SluiceError('CONFIG_INVALID', `${this.what}: no prefix: give one, or let an app open the store`);
    if (!isPrefix(prefix))
      throw new SluiceError(
        'CONFIG_INVALID',
        `${this.what}: the prefix named after the app and its subscriber, ${show(prefix)}, is not a topic name (letters, digits, ".", "_" and "-", at most 200): give a prefix`,
      );
    this.prefix = prefix;
    this.topics = storeTopics(prefix);
    if (this.ownership === 'partition') this.routes = { requests: `${prefix}.requests`, replies: `${prefix}.replies` };
    this.logger = this.baseLogger.child({ prefix });
  }

  /**
   * The topics of `routes`: requests with a partition per shard (co-partitioned with the paced subscriber's
   * topic), replies with one; a reply is read once, soon, so replies are kept an hour.
   */
  private routeTopics(common: StoreTopic['configs']): StoreTopic[] {
    if (this.routes === undefined) return [];
    const { requests, replies } = this.routes;
    const replicationFactor = this.replicationFactor;
    return [
      { topic: requests, partitions: this.shards, replicationFactor, configs: common },
      {
        topic: replies,
        partitions: 1,
        replicationFactor,
        configs: [...common, { name: 'retention.ms', value: '3600000' }],
      },
    ];
  }

  private async ensureTopics(): Promise<void> {
    const common = [
      { name: 'min.insync.replicas', value: String(this.minInsyncReplicas) },
      { name: 'max.message.bytes', value: String(this.maxMessageBytes) },
    ];
    const { changelog, snapshots } = this.topics;
    const replicationFactor = this.replicationFactor;
    await this.client.createTopics([
      {
        topic: changelog,
        partitions: this.shards,
        replicationFactor,
        configs: [
          ...common,
          { name: 'cleanup.policy', value: 'delete' },
          { name: 'retention.ms', value: '-1' },
          { name: 'retention.bytes', value: '-1' },
        ],
      },
      {
        topic: snapshots,
        partitions: this.shards,
        replicationFactor,
        configs: [...common, { name: 'cleanup.policy', value: 'compact' }],
      },
      ...this.routeTopics(common),
    ]);
    const requests = this.routes === undefined ? [] : [this.routes.requests];
    for (const [name, count] of await this.partitionCounts([changelog, snapshots, ...requests])) {
      if (count !== this.shards)
        throw new SluiceError(
          'CONFIG_INVALID',
          `${this.what}: topic "${name}" has ${count} partitions, got shards ${this.shards} (a store's shard count is fixed)`,
        );
    }
  }

  /**
   * The partition counts of the store's topics, once the broker knows them all. Instances of one app that start
   * together each create the topics: the one whose creation the broker took makes them, and the others'
   * are answered that they exist already, while the broker may not serve them yet (`UNKNOWN_TOPIC_OR_PARTITION`,
   * no leader). That is waited out, up to {@link TOPIC_WAIT_ATTEMPTS} asks (about 20 s); past it,
   * `TOPIC_MISSING` names the topics.
   */
  private async partitionCounts(names: string[]): Promise<Map<string, number>> {
    try {
      return await this.client.partitionCounts(names, TOPIC_WAIT_ATTEMPTS);
    } catch (error) {
      if (!this.client.isCatchingUp(error)) throw error;
      throw new SluiceError(
        'TOPIC_MISSING',
        `${this.what}: the broker did not serve the store's topics (${names.join(', ')}) within ${TOPIC_WAIT_ATTEMPTS} asks after they were created; is the cluster healthy?`,
        { cause: error },
      );
    }
  }
}

/** How many times the store asks for its topics' metadata while the broker catches up with them (about 20 s in all). */
const TOPIC_WAIT_ATTEMPTS = 25;
