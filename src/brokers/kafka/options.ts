import type { KafkaConfig } from 'kafkajs';
import { SluiceError, show } from '../../core/errors.js';
import type { Logger } from '../../core/ports.js';

/** Settings of a {@link KafkaBroker}. */
export interface KafkaBrokerOptions {
  /** Bootstrap servers, `host:port`: at least one. */
  brokers: string[];
  /** The kafkajs client id. @default 'sluice' */
  clientId?: string;
  /** TLS settings, passed to kafkajs as they are. */
  ssl?: KafkaConfig['ssl'];
  /** SASL settings, passed to kafkajs as they are. */
  sasl?: KafkaConfig['sasl'];
  /** Anything else for the kafkajs client; merged over Sluice's settings. */
  kafkajs?: Partial<KafkaConfig>;
  /**
   * Consumer settings, in milliseconds where they are times; each has a default (see {@link KafkaConsumerSettings}).
   */
  consumer?: Partial<Omit<KafkaConsumerSettings, 'metadataMaxAgeMs'>>;
  /**
   * How old the cluster metadata (topics, partitions, leaders) may grow before the producer and the
   * consumers read it again. Partitions added to a topic are read, and published to, only once it is:
   * a consumer that sees new partitions makes its group rebalance so that someone owns them. kafkajs's own
   * default is 5 minutes. A positive integer, in milliseconds. @default 30_000
   */
  metadataMaxAgeMs?: number;
  /**
   * Create topics that do not exist when a subscriber starts or a message is published, with this many
   * partitions (replication factor 1 unless `replicationFactor` says otherwise). With `false` no topic is
   * created: neither by Sluice nor, through its requests, by the broker's `auto.create.topics.enable`, so
   * a publish to a missing topic fails (and a dead letter is retried until the topic exists).
   * @default false
   */
  createTopics?:
    | false
    | {
        /** Partitions of a topic created. */
        partitions: number;
        /** Replicas of each partition. @default 1 */
        replicationFactor?: number;
      };
  /**
   * Where this broker's log goes: kafkajs's own (warnings and errors) and Sluice's about its consumers.
   * @default the logger of the app that connects it (`new App({ logger })`); before an app has, as when
   * publishing with no app, `jsonLogger()`: JSON lines on stderr at `SLUICE_LOG_LEVEL`
   */
  logger?: Logger;
}

/** Consumer settings of a {@link KafkaBroker}; every field has a default. */
export interface KafkaConsumerSettings {
  /**
   * The group session timeout, in milliseconds: a member not heard from for this long is out of the group. @default
   * 30_000
   */
  sessionTimeoutMs: number;
  /**
   * How long a rebalance waits for members, in milliseconds. A member that sees a rebalance waits for its
   * revoked partitions' in-flight work (heartbeating) for at most this less one heartbeat interval, and at
   * most the app's `shutdownTimeoutMs` when that is shorter. @default 60_000
   */
  rebalanceTimeoutMs: number;
  /** How often the consumer heartbeats, in milliseconds, also while handlers run long. @default 3_000 */
  heartbeatIntervalMs: number;
  /** How long a fetch waits for data, in milliseconds. @default 1_000 */
  maxWaitTimeMs: number;
  /**
   * How often finished offsets are committed while batches run, in milliseconds of the app's clock.
   * @default 1_000
   */
  commitIntervalMs: number;
  /** Where a group without committed offsets starts. @default `true` (the earliest offset) */
  fromBeginning: boolean;
  /**
   * How old metadata may grow before it is read again, in milliseconds: see `KafkaBrokerOptions.metadataMaxAgeMs`.
   * @default 30_000
   */
  metadataMaxAgeMs: number;
}

const DEFAULT_CONSUMER: KafkaConsumerSettings = {
  sessionTimeoutMs: 30_000,
  rebalanceTimeoutMs: 60_000,
  heartbeatIntervalMs: 3_000,
  maxWaitTimeMs: 1_000,
  commitIntervalMs: 1_000,
  fromBeginning: true,
  metadataMaxAgeMs: 30_000,
};

/**
 * The consumer settings of `options`, defaults filled in.
 *
 * @throws {@link sluice!SluiceError | SluiceError} `CONFIG_INVALID` when `metadataMaxAgeMs` is not a positive integer.
 */
export function consumerSettingsOf(options: KafkaBrokerOptions): KafkaConsumerSettings {
  const age = options.metadataMaxAgeMs;
  if (age !== undefined && !(typeof age === 'number' && Number.isInteger(age) && age > 0)) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `KafkaBroker: metadataMaxAgeMs must be a positive integer (milliseconds), got ${show(age)}`,
    );
  }
  return { ...DEFAULT_CONSUMER, ...options.consumer, ...(age !== undefined && { metadataMaxAgeMs: age }) };
}
