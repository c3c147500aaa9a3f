/**
 * Sluice: what an app author uses. Subscribers, worker pools, by-key lanes, durable pace, the app and the
 * memory broker. The other entry points: `sluice/kafka` (the Kafka broker), `sluice/testing` (a manual
 * clock, loggers for tests, the memory store) and `sluice/adapter` (the ports, for those who write a
 * broker or a store). What moved to those is still exported from here in this release, marked deprecated.
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
export type { AsyncApiDocument } from './app/asyncapi.js';
export type { AppHealth, AppStatus, SubscriberHealth } from './telemetry/health.js';
export { AppControl, type AppInspection, type PaceInspection, type SubscriberInspection } from './app/app-control.js';
export type {
  KeyInspection,
  PaceShardInspection,
  RunPage,
  RunQuery,
  RunStage,
  RunView,
  WaitingFor,
} from './pace-stage/pace-inspection.js';
export type { Cancelled } from './pace/rules.js';
export {
  REPLAY_HEADER,
  type DeadLetterPage,
  type DeadLetterQuery,
  type DeadLetterView,
  type ReplayOptions,
  type ReplayResult,
} from './app/dead-letter-replay.js';
export type {
  ConsoleOptions,
  HealthOptions,
  HttpOptions,
  MetricsOptions,
  MetricsRegistry,
  TracerProviderLike,
  TracingOptions,
} from './telemetry/telemetry-options.js';
export type { AsJson, PacedEventOf, PacedStart } from './app/send.js';
export { STRIPPED_HEADER, type DeadLetterCounts } from './pipeline/executor.js';
export type { Context, ContextState, RunInfo } from './core/context.js';
export type {
  LifecycleHook,
  Middleware,
  MiddlewareContext,
  Next,
  OutgoingMessage,
  PublishInfo,
  PublishMiddleware,
} from './core/middleware.js';
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
  /** @deprecated Import it from `sluice/adapter`; `sluice` stops exporting it in a later release. */
  Broker,
  BrokerServer,
  Clock,
  /** @deprecated Import it from `sluice/adapter`; `sluice` stops exporting it in a later release. */
  ConsumeRequest,
  /** @deprecated Import it from `sluice/adapter`; `sluice` stops exporting it in a later release. */
  Consumer,
  InputTransactions,
  LogFields,
  Logger,
  LogLevel,
  /** @deprecated Import it from `sluice/adapter`; `sluice` stops exporting it in a later release. */
  Alongside,
  ShardLog,
  StagedMessage,
  Store,
  /** @deprecated Import it from `sluice/adapter`; `sluice` stops exporting it in a later release. */
  Timer,
  /** @deprecated Import it from `sluice/adapter`; `sluice` stops exporting it in a later release. */
  TimerOptions,
} from './core/ports.js';
export { lanes, pool, type DispatchStrategy, type Keyed, type Scheduler } from './dispatch/strategy.js';
export { MAX_BATCH, MAX_KEY_BYTES } from './pace/config.js';
export { MAX_WORKERS } from './declare/parse.js';
export type {
  PaceReceipt,
  /**
   * @deprecated The pace stage's own record of a run: no entry point exports it in a later release. A
   * handler sees its run as {@link RunInfo} (`ctx.run`).
   */
  PaceRun,
} from './pace/rules.js';
export { MemoryBroker, type MemoryBrokerOptions } from './brokers/memory/memory-broker.js';
export {
  SubscriberBuilder,
  TopicBuilder,
  type BuildCheck,
  type DecodedFor,
  type PayloadOf,
  type PublishableOn,
  type RepliesCheck,
} from './declare/builder.js';
export { Topic, topic, type PublishedOf, type TopicOptions } from './declare/topic.js';
export {
  Publisher,
  type BrokerChoice,
  type PublisherOptions,
  type Requestable,
  type RequestOptions,
} from './app/publisher.js';
export type { RequestCounts } from './app/requests.js';
export { CORRELATION_HEADER, REPLY_KEY_HEADER, REPLY_TO_HEADER } from './core/reply-headers.js';
export {
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  DEFAULTS,
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  type CompiledSubscriber,
} from './declare/compile.js';
export { subscriber, type SubscriberDecorator, type SubscriberStart } from './declare/decorators.js';
export { parseDuration, type Duration } from './declare/duration.js';
export type {
  CompiledBatch,
  CompiledDebounce,
  CompiledEach,
  CompiledPace,
  CompiledPaceCommon,
  CompiledRate,
  OrderFn,
} from './declare/pace.js';
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
  StandardIssue,
  StandardPathSegment,
  StandardResult,
  StandardSchema,
  SubscriberOptions,
} from './declare/options.js';
export { Router, type Includable, type NotIncludable, type RouterOptions } from './declare/router.js';
export { SubscriberSpec } from './declare/spec.js';
export {
  /** @deprecated Import it from `sluice/adapter`; `sluice` stops exporting it in a later release. */
  shardOf,
} from './shard/shard-of.js';
export { fileStore, type FileStoreOptions } from './store/file-store.js';
export {
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  memoryStore,
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  type MemoryStore,
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  type MemoryStoreOptions,
} from './store/memory-store.js';
export {
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  ManualClock,
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  settle,
} from './testing/manual-clock.js';
export {
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  memoryLogger,
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  silentLogger,
  /** @deprecated Import it from `sluice/testing`; `sluice` stops exporting it in a later release. */
  type LogRecord,
} from './testing/memory-logger.js';
