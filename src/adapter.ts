/**
 * `sluice/adapter`: the ports, for those who write a broker or a store. A {@link Broker} hands out
 * {@link Consumer}s and publishes; a {@link Store} gives each shard a {@link ShardLog} (a key's shard is
 * {@link shardOf}); all time goes through a {@link Clock}. Each port says what it must do; in the
 * repository, `test/contract/` holds the suite that checks a broker against its port (the memory broker
 * and the Kafka broker both run it).
 *
 * @example
 * ```ts
 * import type { Broker, ConsumeRequest, Consumer, PublishOptions } from 'sluice/adapter';
 *
 * class QueueBroker implements Broker {
 *   readonly kind = 'queue';
 *   async connect(): Promise<void> {}
 *   async publish(topic: string, value: unknown, options?: PublishOptions): Promise<void> { ... }
 *   async consume(request: ConsumeRequest): Promise<Consumer> { ... }
 *   async close(): Promise<void> {}
 * }
 * ```
 *
 * @module sluice/adapter
 */
export { SystemClock } from './core/clock.js';
export { ERROR_CODES, SluiceError, type ErrorCode } from './core/errors.js';
export {
  ERROR_HEADER,
  PARTITION_KEY_HEADER,
  type HeaderValue,
  type Headers,
  type InboundMessage,
  type MessageInfo,
  type PublishOptions,
  type RawHeaders,
  type RawMessage,
} from './core/message.js';
export type {
  Broker,
  BrokerServer,
  Clock,
  ConsumeRequest,
  Consumer,
  InputTransactions,
  LogFields,
  Logger,
  LogLevel,
  PartitionLag,
  Alongside,
  ShardLog,
  StagedMessage,
  Store,
  StoreObserver,
  StoreOwner,
  Timer,
  TimerOptions,
} from './core/ports.js';
export { shardOf } from './shard/shard-of.js';
