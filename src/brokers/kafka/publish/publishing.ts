import type { Message } from 'kafkajs';
import { SluiceError, reasonOf } from '../../../core/errors.js';
import { encodeValue, type PublishOptions } from '../../../core/message.js';
import type { StagedMessage } from '../../../core/transactions.js';
import { headersTo } from '../convert.js';

/** What Kafka allows a topic's name to be (besides not `.` or `..`). */
const LEGAL_TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;

/** True for a name a topic can have; a name no topic can have is left to the broker, which refuses it for good. */
export const isLegalTopic = (topic: string): boolean => LEGAL_TOPIC.test(topic) && topic !== '.' && topic !== '..';

/** One message to publish as kafkajs's producer takes it. */
export function recordOf(value: unknown, options: PublishOptions | undefined): Message {
  return {
    key: keyBytes(options?.key),
    value: options?.tombstone === true ? null : encodeValue(value),
    headers: options?.headers ? headersTo(options.headers) : undefined,
    partition: options?.partition,
  };
}

/** A publish's key as kafkajs takes it: text as it is, bytes as a Buffer (not copied), none as null. */
function keyBytes(key: string | Uint8Array | undefined): Buffer | string | null {
  if (key === undefined) return null;
  return typeof key === 'string' || Buffer.isBuffer(key)
    ? key
    : Buffer.from(key.buffer, key.byteOffset, key.byteLength);
}

/**
 * Broker answers that refuse the message itself, or a topic name no topic can have (kafkajs calls them not
 * retriable): sending it again cannot succeed. Other non-retriable answers (authorization) can pass once an
 * operator acts, and a missing topic once it is created.
 */
export const REFUSALS: ReadonlySet<string> = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'INVALID_TIMESTAMP',
  'INVALID_TOPIC_EXCEPTION',
]);

/** A failed send as it is thrown: `PUBLISH_REFUSED` when the broker refused the message for good, else as it is. */
export function publishError(topic: string, error: unknown): unknown {
  const refused = refusalOf(error);
  if (refused === undefined) return error;
  return new SluiceError('PUBLISH_REFUSED', `kafka: publish to "${topic}" refused: ${refused} (${reasonOf(error)})`, {
    cause: error,
  });
}

/** True when the broker refused a send for good (see `REFUSALS`): sending the same messages again cannot succeed. */
export const isRefusal = (error: unknown): boolean => refusalOf(error) !== undefined;

/** The refusal in a kafkajs error or its causes (kafkajs wraps the broker's answer), if there is one. */
const refusalOf = (error: unknown): string | undefined => errorTypeIn(error, (type) => REFUSALS.has(type));

/** The first broker answer (`type`) in a kafkajs error or its causes that `matches`, if there is one. */
export function errorTypeIn(error: unknown, matches: (type: string) => boolean): string | undefined {
  let e: unknown = error;
  for (let depth = 0; depth < 8 && e !== null && typeof e === 'object'; depth++) {
    const { type, cause } = e as { type?: unknown; cause?: unknown };
    if (typeof type === 'string' && matches(type)) return type;
    e = cause;
  }
  return undefined;
}

/** Messages as kafkajs's `sendBatch` takes them: by topic, each topic's in the order given. */
export function byTopic(messages: Iterable<StagedMessage>): Map<string, Message[]> {
  const records = new Map<string, Message[]>();
  for (const m of messages) {
    let list = records.get(m.topic);
    if (list === undefined) records.set(m.topic, (list = []));
    list.push(recordOf(m.value, m.options));
  }
  return records;
}
