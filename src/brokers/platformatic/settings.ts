import type { ConsumerOptions } from '@platformatic/kafka';
import type { KafkaConsumerSettings } from '../kafka/options.js';
import type { Logger } from '../../core/ports.js';

/**
 * Settings of a {@link PlatformaticKafkaBroker}: those of `KafkaBroker` that are not kafkajs's, and the group
 * protocol.
 */
export interface PlatformaticKafkaBrokerOptions {
  /** Bootstrap servers, `host:port`: at least one. */
  brokers: string[];
  /** The client id. @default 'sluice' */
  clientId?: string;
  /**
   * The consumer group protocol: `'consumer'`, the protocol of KIP-848 (Kafka 4.0 and later), where the broker
   * assigns partitions incrementally and a join or a leave moves only the partitions that change owner; or
   * `'classic'`, the protocol every Kafka speaks, where each rebalance revokes every partition first.
   * @default 'classic'
   */
  groupProtocol?: 'classic' | 'consumer';
  /** Consumer settings (see `KafkaConsumerSettings`); under `groupProtocol: 'consumer'` the broker sets the session. */
  consumer?: Partial<Omit<KafkaConsumerSettings, 'metadataMaxAgeMs'>>;
  /** How old cluster metadata may grow before it is read again, in milliseconds. @default 30_000 */
  metadataMaxAgeMs?: number;
  /** Create missing topics with this many partitions; see `KafkaBrokerOptions.createTopics`. @default false */
  createTopics?:
    | false
    | {
        /** Partitions of a topic created. */
        partitions: number;
        /** Replicas of each partition. @default 1 */
        replicationFactor?: number;
      };
  /** Anything else for @platformatic/kafka's consumers (TLS, SASL), merged over Sluice's settings. */
  platformatic?: Partial<ConsumerOptions<Buffer, Buffer, Buffer, Buffer>>;
  /** Where this broker's log goes. @default the logger of the app that connects it */
  logger?: Logger;
}

/** What a consumer of this adapter is made with. */
export interface PlatformaticSettings extends KafkaConsumerSettings {
  readonly clientId: string;
  readonly bootstrapBrokers: string[];
  readonly groupProtocol: 'classic' | 'consumer';
  readonly platformatic: Partial<ConsumerOptions<Buffer, Buffer, Buffer, Buffer>> | undefined;
}
