import type { MessageToProduce } from '@platformatic/kafka';
import { SluiceError, reasonOf } from '../../core/errors.js';
import type { PublishOptions } from '../../core/message.js';
import { REFUSALS, isLegalTopic, recordOf } from '../kafka/publish/publishing.js';
import { pk } from './client.js';

type Bytes = Buffer | undefined;
export const bytes = (data?: Buffer | string): Bytes =>
  data === undefined || Buffer.isBuffer(data) ? data : Buffer.from(data);

/** One message to publish as the client's producer takes it: bytes throughout, every value of a repeated header. */
export function messageOf(
  topic: string,
  value: unknown,
  options: PublishOptions | undefined,
): MessageToProduce<Buffer, Buffer, Buffer, Buffer> {
  const record = recordOf(value, options);
  const headers = new Map<Buffer, Buffer>();
  for (const [name, v] of Object.entries(record.headers ?? {}))
    for (const one of Array.isArray(v) ? v : [v]) headers.set(Buffer.from(name), bytes(one)!);
  const partition = options?.partition;
  return {
    topic,
    key: record.key === null || record.key === undefined ? undefined : bytes(record.key),
    value: record.value === null || record.value === undefined ? undefined : bytes(record.value),
    headers,
    ...(partition !== undefined && { partition }),
  };
}

/** The broker's answer in `error` that refused the messages themselves for good (see `REFUSALS`), if any. */
const refusedAs = (error: unknown): string | undefined =>
  [...REFUSALS].find((apiId) => pk.findErrorBy(error as Error, 'apiId', apiId) !== null);

/** True when the broker refused the messages of a send for good (too large, invalid): sending them again fails. */
export const isRefused = (error: unknown): boolean => refusedAs(error) !== undefined;

/**
 * `PUBLISH_REFUSED` when the broker refused a send to `topics` for good (a message too large or invalid, a name no
 * topic can have); undefined for every other failure, which may pass on a later try.
 */
export function refusalOf(topics: string, error: unknown): SluiceError | undefined {
  const refused = refusedAs(error);
  if (refused !== undefined)
    return new SluiceError(
      'PUBLISH_REFUSED',
      `kafka: publish to "${topics}" refused: ${refused} (${reasonOf(error)})`,
      {
        cause: error,
      },
    );
  const illegal = topics.split(', ').find((t) => !isLegalTopic(t));
  if (illegal !== undefined)
    return new SluiceError(
      'PUBLISH_REFUSED',
      `kafka: publish to "${illegal}" refused: not a legal topic name (${reasonOf(error)})`,
      { cause: error },
    );
  return undefined;
}
