import { ERROR_HEADER } from '../core/message.js';
import type { Broker } from '../core/ports.js';
import { CORRELATION_HEADER, REPLY_TO_HEADER } from '../core/reply-headers.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import type { Topic } from '../declare/topic.js';
import { jsonSchemaOf, type JsonSchema } from './asyncapi-schema.js';

/**
 * An AsyncAPI 3.0 document, as a plain object ready for `JSON.stringify` (see docs/asyncapi.md).
 *
 * @category App
 */
export interface AsyncApiDocument {
  /** The AsyncAPI version the document follows. */
  readonly asyncapi: '3.0.0';
  /** `info`, `defaultContentType`, `servers`, `channels`, `operations`. */
  readonly [field: string]: unknown;
}

/** What an app's document is made of. */
export interface AsyncApiSource {
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  /** The topic the app's requests are answered on. @default `<name>.replies` */
  readonly replyTopic?: string;
  readonly mounts: readonly { readonly broker: Broker; readonly subscribers: readonly CompiledSubscriber[] }[];
  /** The topics the app published or requested on outside handlers (`app.publisher`, `app.request`). */
  readonly published: readonly { readonly topic: Topic<unknown, unknown>; readonly requests: boolean }[];
}

const KAFKA_BINDING = '0.5.0';
type Json = Record<string, unknown>;

/** A name as an AsyncAPI object key: letters, digits, `.`, `_` and `-`; anything else becomes `_`. */
const keyOf = (name: string): string => name.replace(/[^A-Za-z0-9._-]/g, '_');
const ref = (path: string): Json => ({ $ref: `#/${path}` });

/** The AsyncAPI 3.0 document of an app: see {@link App.asyncapi}. */
export function asyncApiOf(app: AsyncApiSource): AsyncApiDocument {
  const servers: Json = {};
  const serverOf = new Map<Broker, string>();
  for (const { broker } of app.mounts) {
    if (serverOf.has(broker)) continue;
    const id = serverOf.size === 0 ? broker.kind : `${broker.kind}-${serverOf.size + 1}`;
    serverOf.set(broker, keyOf(id));
    const { host, protocol } = broker.server?.() ?? { host: 'localhost', protocol: broker.kind };
    servers[keyOf(id)] = { host, protocol, description: `The ${broker.kind} broker the app reads and publishes on.` };
  }
  const channels = new Channels();
  const operations: Json = {};
  for (const { broker, subscribers } of app.mounts) {
    const server = serverOf.get(broker)!;
    const kafka = broker.kind === 'kafka';
    for (const s of subscribers) receive(s, server, kafka, channels, operations);
  }
  for (const { topic, requests } of app.published) {
    const keyed = topic.options.key !== undefined;
    const channel = channels.add(topic.name, jsonSchemaOf(topic.options.schema), { keyed, correlated: requests });
    const operation: Json = {
      action: 'send',
      channel: ref(`channels/${channel}`),
      messages: [ref(`channels/${channel}/messages/message`)],
      summary: requests ? `Requests on ${topic.name} (app.request)` : `Publishes on ${topic.name} (app.publisher)`,
    };
    const replies = app.replyTopic ?? `${app.name}.replies`;
    if (requests)
      operation.reply = replyTo(channels.add(replies, jsonSchemaOf(topic.options.reply), { correlated: true }));
    operations[keyOf(`${requests ? 'request' : 'publish'}.${topic.name}`)] = operation;
  }
  const info: Json = { title: app.name, version: app.version };
  if (app.description !== undefined) info.description = app.description;
  return {
    asyncapi: '3.0.0',
    info,
    defaultContentType: 'application/json',
    servers,
    channels: channels.all,
    operations,
  };
}

/** A subscriber's operations: it receives; it sends its dead letters, its results and its replies. */
function receive(s: CompiledSubscriber, server: string, kafka: boolean, channels: Channels, operations: Json): void {
  const name = keyOf(s.name);
  const keyed = s.byKey || s.pace !== undefined;
  const input = channels.add(s.topic, jsonSchemaOf(s.schema), { server, keyed, correlated: s.replies });
  const operation: Json = {
    action: 'receive',
    channel: ref(`channels/${input}`),
    messages: [ref(`channels/${input}/messages/message`)],
    summary: `Subscriber ${s.name}`,
    'x-sluice-subscriber': sluiceExtension(s),
  };
  if (kafka)
    operation.bindings = { kafka: { groupId: { type: 'string', enum: [s.group] }, bindingVersion: KAFKA_BINDING } };
  if (s.replies) {
    // The requester names the topic of its replies in a header: the channel's address is not known here.
    const replies = channels.add(`${s.name}.replies`, undefined, { server, address: null, correlated: true });
    operation.reply = replyTo(replies);
  }
  operations[`${name}.receive`] = operation;
  for (const t of s.publishTo) {
    const out = channels.add(t.name, jsonSchemaOf(t.options.schema), { server, keyed: t.options.key !== undefined });
    operations[`${name}.publish.${keyOf(t.name)}`] = {
      action: 'send',
      channel: ref(`channels/${out}`),
      messages: [ref(`channels/${out}/messages/message`)],
      summary: `The return value of subscriber ${s.name}${s.exactlyOnce ? ', in one transaction with its input offsets' : ''}`,
    };
  }
  if (s.deadLetter !== false) {
    const dlq = channels.deadLetters(s.deadLetter, server);
    operations[`${name}.deadLetter`] = {
      action: 'send',
      channel: ref(`channels/${dlq}`),
      messages: [ref(`channels/${dlq}/messages/deadLetter`)],
      summary: `What subscriber ${s.name} rejected or gave up on, after ${s.retry.attempts} attempts`,
    };
  }
}

/** An operation's `reply`: on `channel`, at the address a request's reply-to header names. */
function replyTo(channel: string): Json {
  return {
    address: { location: `$message.header#/${REPLY_TO_HEADER}` },
    channel: ref(`channels/${channel}`),
    messages: [ref(`channels/${channel}/messages/message`)],
  };
}

/** What only Sluice can say of a subscriber: `x-sluice-subscriber` (docs/asyncapi.md). */
function sluiceExtension(s: CompiledSubscriber): Json {
  const extension: Json = {
    name: s.name,
    group: s.group,
    concurrency: s.byKey ? 'lanes' : 'workers',
    workers: s.workers,
    retry: { ...s.retry },
    deadLetter: s.deadLetter,
    timeoutMs: s.timeoutMs,
    replies: s.replies,
    exactlyOnce: s.exactlyOnce,
  };
  if (s.batchMax !== undefined) extension.batchMax = s.batchMax;
  if (s.pace !== undefined) extension.pace = plain(s.pace);
  return extension;
}

/** `value` as JSON: a function (a pace's `order`) says only that it is set. */
function plain(value: object): Json {
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, typeof v === 'function' ? true : v !== null && typeof v === 'object' ? plain(v) : v]),
  );
}

/** The document's channels, one per topic, each with its one message. */
class Channels {
  readonly all: Json = {};

  /** The channel of `topic` (made at its first mention; a schema given later fills an empty payload). */
  add(
    topic: string,
    schema: JsonSchema | undefined,
    how: { server?: string; keyed?: boolean; address?: null; correlated?: boolean } = {},
  ): string {
    const id = keyOf(topic);
    const channel = (this.all[id] ??= {
      address: how.address === null ? null : topic,
      messages: {},
      ...(how.server !== undefined ? { servers: [ref(`servers/${how.server}`)] } : {}),
    }) as { messages: { message?: Json } };
    const message = (channel.messages.message ??= { name: 'message', title: `A message on ${topic}` });
    if (schema !== undefined && message.payload === undefined) message.payload = schema;
    if (how.keyed === true) message.bindings = { kafka: { key: { type: 'string' }, bindingVersion: KAFKA_BINDING } };
    if (how.correlated === true) message.correlationId = { location: `$message.header#/${CORRELATION_HEADER}` };
    return id;
  }

  /** A dead-letter topic's channel: the original message's bytes, with Sluice's headers saying why. */
  deadLetters(topic: string, server: string): string {
    const id = keyOf(topic);
    const channel = (this.all[id] ??= { address: topic, servers: [ref(`servers/${server}`)], messages: {} }) as {
      messages: Json;
    };
    const text = { type: 'string' };
    channel.messages.deadLetter = {
      name: 'deadLetter',
      title: 'A dead letter',
      summary: 'The original message, as it came, with the reason and where it came from in its headers.',
      headers: {
        type: 'object',
        properties: {
          [ERROR_HEADER]: { ...text, description: 'Why: the error code and message.' },
          'x-sluice-original-topic': text,
          'x-sluice-original-partition': text,
          'x-sluice-original-offset': text,
          'x-sluice-attempts': text,
        },
      },
    };
    return id;
  }
}
