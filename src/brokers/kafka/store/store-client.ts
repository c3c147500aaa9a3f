/**
 * What the Kafka store asks of a Kafka client: topics, a fencing transactional producer per shard, and reads of
 * one partition's committed messages. `kafkaStore` (sluice/kafka) has it from kafkajs, `platformaticKafkaStore`
 * (sluice/kafka/platformatic) from @platformatic/kafka; the store itself (kafka-store.ts, kafka-shard-log.ts)
 * knows neither. Types only: nothing here loads a client.
 */
import type { SluiceError } from '../../../core/errors.js';
import type { Alongside } from '../../../core/ports.js';

/** A message read back from one of the store's partitions. */
export interface StoredMessage {
  /** Its offset in the partition, as a decimal string. */
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Its headers, as the batch holds them (a client's read may leave them out: the store has none). */
  readonly recordHeaders?: readonly (readonly [Buffer | null, Buffer | null])[];
  /** When the broker took it (likewise). */
  readonly appendedAt?: bigint;
}

/** A message the store writes to one of its partitions: a tombstone has no value. */
export interface StoreMessage {
  readonly key: string | null;
  readonly value: Buffer | null;
}

/** A topic the store creates when it is missing. */
export interface StoreTopic {
  readonly topic: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly configs: readonly { readonly name: string; readonly value: string }[];
}

/** How a read of a partition stops (see {@link StoreClient.read}). */
export type ReadUntil = 'end' | ((message: StoredMessage) => boolean);

/** One transaction of a shard's producer. */
export interface StoreTransaction {
  /**
   * Sends `messages` to `partition` of `topic` in one request, all acknowledged (`acks: -1`); resolves with the
   * offset of the first.
   */
  send(topic: string, partition: number, messages: readonly StoreMessage[]): Promise<number>;
  /** Sends the outputs of the transaction's records (a paced run's publishes beside its `done` record), in order. */
  sendAlongside(alongside: readonly Alongside[]): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/** A shard's transactional producer, which fenced every earlier producer of its transactional ID when made. */
export interface StoreWriter {
  /** Begins a transaction (one at a time). */
  transaction(): Promise<StoreTransaction>;
  close(): Promise<void>;
}

/** A Kafka client as the store uses it. Made by the store's factory, connected by `connect()`. */
export interface StoreClient {
  connect(): Promise<void>;
  /**
   * Creates the topics the broker does not have (an existing one is left as it is, whoever made it), waiting out
   * a broker that is catching up with topics just created.
   */
  createTopics(topics: readonly StoreTopic[]): Promise<void>;
  /**
   * The partition count of each topic, once the broker serves them all: waits while it catches up with topics
   * just created, up to `attempts` asks; past them throws an error {@link StoreClient.isCatchingUp} knows.
   */
  partitionCounts(topics: readonly string[], attempts: number): Promise<Map<string, number>>;
  /** The ID of the cluster. */
  clusterId(): Promise<string>;
  /** Deletes the messages of `partition` of `topic` before `offset`. */
  deleteRecords(topic: string, partition: number, offset: number): Promise<void>;
  /**
   * A transactional producer of `transactionalId`, connected, that has fenced every earlier producer of the ID:
   * their open transaction is ended, their later ones refused.
   */
  writer(transactionalId: string): Promise<StoreWriter>;
  /**
   * Reads `partition` of `topic` from its start, committed messages only (aborted transactions and control
   * records skipped), calling `visit` for each in offset order: until the partition's end as it is when the read
   * begins (`'end'`: call it when no transaction is open on the partition), or until `until` answers true.
   */
  read(topic: string, partition: number, until: ReadUntil, visit: (message: StoredMessage) => void): Promise<void>;
  /** True when a transaction failed because a newer producer of the same transactional ID fenced this one. */
  isFenced(error: unknown): boolean;
  /** True when the broker answered only that it is catching up with a topic just created. */
  isCatchingUp(error: unknown): boolean;
  /** `PUBLISH_REFUSED` naming `topics` when the broker refused the messages of a send for good; else undefined. */
  refusal(topics: string, error: unknown): SluiceError | undefined;
  /** True when a send failed because its topic does not exist. */
  isUnknownTopic(error: unknown): boolean;
  close(): Promise<void>;
}
