/**
 * Sluice: subscribers, worker pools, by-key lanes, durable pace, the memory broker and the testing
 * helpers. The Kafka broker is in `sluice/kafka`.
 *
 * Start with {@link App}, {@link subscriber} and {@link MemoryBroker}; the guides in the repository's
 * `docs/` folder (subscribers, workers, routers, pace, store, testing, kafka) tell the same story at
 * length.
 *
 * @example
 * ```ts
 * import 'reflect-metadata';
 * import { App, HandlerOutcome, MemoryBroker, subscriber, type Context } from 'sluice';
 *
 * class Billing {
 *   @subscriber('orders', { workers: 4, retry: { attempts: 3 } })
 *   async bill(order: { id: string; cents: number }, ctx: Context) {
 *     await charge(order, { signal: ctx.signal });
 *     return HandlerOutcome.ack();
 *   }
 * }
 *
 * const app = new App({ name: 'billing' }).withBroker(new MemoryBroker(), (b) => b.include(Billing));
 * await app.run(); // serves until SIGINT/SIGTERM, then stops gracefully
 * ```
 *
 * @module sluice
 */
export { App, type AppOptions, type Receipt } from './app/app.js';
export type { AsJson, PacedEventOf, PacedStart } from './app/send.js';
export { STRIPPED_HEADER, type DeadLetterCounts } from './app/executor.js';
export type { Context, RunInfo } from './core/context.js';
export { ERROR_CODES, SluiceError, type ErrorCode } from './core/errors.js';
export { SystemClock } from './core/clock.js';
export { jsonLogger } from './core/logger.js';
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
export { HandlerOutcome } from './core/outcome.js';
export type {
  Broker,
  Clock,
  ConsumeRequest,
  Consumer,
  LogFields,
  Logger,
  LogLevel,
  ShardLog,
  Store,
  Timer,
  TimerOptions,
} from './core/ports.js';
export { lanes, pool, type DispatchStrategy, type Keyed, type Scheduler } from './dispatch/strategy.js';
export { MAX_BATCH, MAX_KEY_BYTES } from './pace/config.js';
export { MAX_WORKERS } from './declare/validate.js';
export type { PaceReceipt, PaceRun } from './pace/rules.js';
export { MemoryBroker, type MemoryBrokerOptions } from './brokers/memory/memory-broker.js';
export { SubscriberBuilder } from './declare/builder.js';
export { DEFAULTS, type CompiledSubscriber } from './declare/compile.js';
export { subscriber, type SubscriberDecorator } from './declare/decorators.js';
export { parseDuration, type Duration } from './declare/duration.js';
export type {
  Decoder,
  Handler,
  HandlerObject,
  HandlerResult,
  KeyFn,
  KeySource,
  PaceOptions,
  RetryOptions,
  SharedOptions,
  SubscriberOptions,
} from './declare/options.js';
export { Router, type Includable, type RouterOptions } from './declare/router.js';
export { SubscriberSpec } from './declare/spec.js';
export { shardOf } from './shard/shard-of.js';
export { fileStore, type FileStoreOptions } from './store/file-store.js';
export { memoryStore, type MemoryStore, type MemoryStoreOptions } from './store/memory-store.js';
export { ManualClock, settle } from './testing/manual-clock.js';
export { memoryLogger, silentLogger, type LogRecord } from './testing/memory-logger.js';
