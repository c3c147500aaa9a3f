import { SluiceError, show } from '../core/errors.js';
import type { InboundMessage, PublishOptions, RawHeaders } from '../core/message.js';
import type { Broker } from '../core/ports.js';
import { decoderOf } from '../declare/compile.js';
import type { Topic } from '../declare/topic.js';
import type { StartParts } from './start-parts.js';

/**
 * What one publish of a {@link Publisher} may add: the key (else the topic's `key` of the value), headers
 * (over the topic's), a partition.
 *
 * @category Publishing
 */
export interface PublisherOptions {
  /** The key: text (sent as UTF-8) or bytes. @default the topic's `key` of the value, else none */
  readonly key?: string | Uint8Array;
  /** Headers, over the topic's own. */
  readonly headers?: RawHeaders;
  /** Pin the partition; otherwise the key's hash picks it. */
  readonly partition?: number;
}

/**
 * What `app.publisher(topic, …)` and `app.request(topic, …)` may be told: the broker, where the app has more
 * than one.
 *
 * @category Publishing
 */
export interface BrokerChoice {
  /** The broker to publish on: one the app was given with `withBroker`. @default the app's only broker */
  readonly broker?: Broker;
}

/**
 * Settings of one `app.request`: a publish's, and how long to wait for the reply.
 *
 * @category Publishing
 */
export interface RequestOptions extends PublisherOptions, BrokerChoice {
  /** How long to wait for the reply, in milliseconds (a finite number > 0). @default 30_000 */
  readonly timeoutMs?: number;
}

/**
 * What `app.request` takes for a topic whose replies are `R`: the topic, when somebody replies on it (it was
 * made with `reply`, or with a reply type); else a type that says so, so that the call does not compile.
 *
 * @category Publishing
 */
export type Requestable<R> = [R] extends [never]
  ? {
      /** Why the topic is refused. */
      readonly nobodyReplies: 'make the topic with topic(name, { reply }) or topic<T, Reply>(name)';
    }
  : unknown;

/** What a publisher needs of its app: its parts while it runs, and its brokers. */
export interface PublisherHost {
  readonly name: string;
  readonly state: string;
  readonly parts: StartParts | undefined;
  readonly brokers: readonly Broker[];
}

/** The host of an app's publishers: its name, and its lifecycle's state and parts and brokers as they are now. */
export function publisherHostOf(
  name: string,
  app: { readonly state: string; readonly parts: StartParts | undefined },
  brokers: () => readonly Broker[],
): PublisherHost {
  return {
    name,
    get state() {
      return app.state;
    },
    get parts() {
      return app.parts;
    },
    get brokers() {
      return [...new Set(brokers())];
    },
  };
}

/**
 * A typed producer of one topic, outside handlers: `app.publisher(invoices).publish(invoice)`. Each publish
 * goes through the app's publish middlewares and tracing (told `kind: 'publisher'`), with the topic's key and
 * headers, and resolves once the broker has the message. Made before or after `start()`; it publishes while
 * the app runs.
 *
 * @typeParam T - the topic's type: what `publish` takes.
 * @category Publishing
 */
export class Publisher<T> {
  /** @internal Made by `app.publisher`. */
  constructor(
    /** The topic it publishes on. */
    readonly topic: Topic<T, unknown>,
    private readonly host: PublisherHost,
    private readonly choice: BrokerChoice,
  ) {}

  /**
   * Publishes `value` (as JSON, or as it is for a string or bytes); resolves once the broker has it.
   *
   * @throws {@link SluiceError} (as a rejection) `APP_STATE` unless the app is running; `CONFIG_INVALID` for
   *   an app with no broker or several and no `broker` chosen; `PUBLISH_REFUSED` and what else the broker
   *   rejects with.
   */
  async publish(value: T, options: PublisherOptions = {}): Promise<void> {
    const { broker, parts } = running(this.host, this.choice, 'publish');
    const { partition } = options;
    const outgoing = { ...this.topic.outgoing(value, options), ...(partition !== undefined ? { partition } : {}) };
    await parts.publishOn(broker)(undefined, this.topic.name, value, outgoing);
  }
}

/** The running app's parts and the broker chosen, else the error that says why there are none. */
export function running(
  host: PublisherHost,
  choice: BrokerChoice,
  what: string,
): { broker: Broker; parts: StartParts } {
  if (host.state !== 'running' || host.parts === undefined)
    throw new SluiceError('APP_STATE', `App "${host.name}": ${what}() needs a running app, it is ${host.state}`);
  const brokers = host.brokers;
  const broker = choice.broker ?? (brokers.length === 1 ? brokers[0] : undefined);
  if (broker === undefined || !brokers.includes(broker))
    throw new SluiceError(
      'CONFIG_INVALID',
      `App "${host.name}": ${what}() needs the broker to use: ${choice.broker !== undefined ? 'the one given is not one of the app' : `the app has ${brokers.length}`}; give { broker } of those passed to withBroker`,
    );
  return { broker, parts: host.parts };
}

/** Sends a request on `topic` and decodes its reply with the topic's `reply` decoder (JSON without one). */
export async function request<Q, R>(
  host: PublisherHost,
  topic: Topic<Q, R>,
  value: Q,
  options: RequestOptions,
): Promise<R> {
  const { timeoutMs = 30_000, broker: _broker, partition, ...rest } = options;
  if (!(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs > 0))
    throw new SluiceError(
      'CONFIG_INVALID',
      `App "${host.name}": request(${show(topic.name)}): timeoutMs must be a finite number > 0, got ${show(timeoutMs)}`,
    );
  const { broker, parts } = running(host, options, 'request');
  const outgoing: PublishOptions = {
    ...topic.outgoing(value, rest),
    ...(partition !== undefined ? { partition } : {}),
  };
  const reply: InboundMessage = await parts.requestsOn(broker).request(topic.name, value, outgoing, timeoutMs);
  return decoderOf(topic.options.reply)(reply.value ?? new Uint8Array()) as R;
}
