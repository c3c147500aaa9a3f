/**
 * The one module that loads kafkajs at run time. kafkajs is an optional peer dependency: `import 'sluice'`
 * never reaches this module, and `sluice/kafka` needs kafkajs installed beside Sluice. A static
 * `import ... from 'kafkajs'` would fail while the module graph is linked, before any code here could run,
 * with Node's bare "Cannot find package 'kafkajs'"; kafkajs is CommonJS, so it is loaded with a synchronous
 * `require` instead (no top-level await, which would stop `require('sluice/kafka')` from working), and a
 * missing kafkajs is a {@link SluiceError} that says what to install. The other modules here import kafkajs
 * for types only (`import type`, erased from the build).
 */
import { createRequire } from 'node:module';
import type * as kafkajs from 'kafkajs';
import { SluiceError } from '../../core/errors.js';

/** The kafkajs versions `sluice/kafka` is written and tested against (package.json's `peerDependencies`). */
export const KAFKAJS_RANGE = '^2.2.4';

/** Loads kafkajs with `load` (Node's `require`, from this module), or says how to install it if it is missing. */
export function loadKafkajs(load: (id: string) => unknown = createRequire(import.meta.url)): typeof kafkajs {
  try {
    return load('kafkajs') as typeof kafkajs;
  } catch (error) {
    if (isMissing(error)) {
      throw new SluiceError(
        'DEPENDENCY_MISSING',
        `sluice/kafka needs the package kafkajs (${KAFKAJS_RANGE}), an optional peer dependency of sluice that is not installed: run \`npm install kafkajs@${KAFKAJS_RANGE}\` in your project`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Whether `require('kafkajs')` failed because kafkajs itself cannot be found (not a file inside it). */
function isMissing(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'MODULE_NOT_FOUND' && typeof message === 'string' && message.split('\n', 1)[0]!.includes(`'kafkajs'`);
}

export const { AssignerProtocol, Kafka, PartitionAssigners, Partitioners, logLevel } = loadKafkajs();
/** The kafkajs client class's instance type, beside the class itself. */
export type Kafka = kafkajs.Kafka;

/** What a read of one partition gets back of a fetch: kafkajs's decoded messages and what it says of the partition. */
export interface FetchedPartition {
  readonly partition: number;
  readonly highWatermark: string;
  readonly messages: readonly kafkajs.KafkaMessage[];
}

/** kafkajs's `Batch` of one fetched partition: its messages less aborted transactions' and control records. */
export interface FetchedBatch {
  readonly messages: readonly kafkajs.KafkaMessage[];
  /** The offset of its last message, control records and aborted ones included (see kafkajs). */
  lastOffset(): string;
}

/** A broker connection of kafkajs's cluster, as far as a fetch goes. */
export interface InternalBroker {
  fetch(request: {
    replicaId: number;
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{ responses: { topicName: string; partitions: FetchedPartition[] }[] }>;
}

/** kafkajs's cluster of broker connections (metadata and leaders), as far as a fetch goes. */
export interface InternalCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadata(): Promise<void>;
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(node: { nodeId: string }): Promise<InternalBroker>;
  /** The partitions' latest offsets (or earliest, `fromBeginning`), as seen at the cluster's isolation level. */
  fetchTopicsOffset(
    topics: { topic: string; fromBeginning: boolean; partitions: { partition: number }[] }[],
  ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

/** What reading a partition without a consumer group takes of kafkajs (see {@link kafkajsInternals}). */
export interface KafkajsInternals {
  /** A new cluster of connections; its offset listings see `isolationLevel` ({@link READ_COMMITTED} unless said). */
  readonly cluster: (isolationLevel?: number) => InternalCluster;
  readonly batch: (topic: string, fetchedOffset: string, partition: FetchedPartition) => FetchedBatch;
}

/** kafkajs's READ_COMMITTED isolation level, as its fetch takes it. */
export const READ_COMMITTED = 1;
/** kafkajs's READ_UNCOMMITTED isolation level: an offset listing then answers the high watermark. */
export const READ_UNCOMMITTED = 0;

/**
 * What reading a partition without a consumer group takes of kafkajs, whose public API reads only through a
 * group (and a new group's first join waits the broker's `group.initial.rebalance.delay.ms`, 3 s by Kafka's
 * default): the client's own cluster of broker connections, made by the function the client keeps for its
 * consumers and producers under a private symbol, and its `Batch`, which drops aborted transactions'
 * messages and control records as a consumer does. Neither is kafkajs's public API (this is written against
 * 2.2.4): undefined when `kafka` or this kafkajs lacks either, and reads then join a group of their own.
 */
export function kafkajsInternals(
  kafka: Kafka,
  load: (id: string) => unknown = createRequire(import.meta.url),
): KafkajsInternals | undefined {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const make = symbol === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[symbol];
  if (typeof make !== 'function') return undefined;
  let Batch: unknown;
  try {
    Batch = load('kafkajs/src/consumer/batch.js');
  } catch {
    return undefined;
  }
  if (typeof Batch !== 'function') return undefined;
  const BatchClass = Batch as new (topic: string, fetchedOffset: string, partition: FetchedPartition) => FetchedBatch;
  return {
    cluster: (isolationLevel = READ_COMMITTED) =>
      (make as (options: object) => InternalCluster).call(kafka, { allowAutoTopicCreation: false, isolationLevel }),
    batch: (topic, fetchedOffset, partition) => new BatchClass(topic, fetchedOffset, partition),
  };
}
