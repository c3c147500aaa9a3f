import type { Transaction } from 'kafkajs';
import { SluiceError, reasonOf } from '../../../core/errors.js';
import type { Alongside } from '../../../core/ports.js';
import { byTopic, errorTypeIn, isRefusal, publishError } from '../publish/publishing.js';

/**
 * Sends the outputs of a transaction's records (a paced run's publishes beside its `done` record, see
 * `Alongside`), gathered by topic, in the records' order.
 */
export async function sendAlongside(txn: Transaction, alongside: readonly Alongside[]): Promise<void> {
  const records = byTopic(alongside.flatMap((a) => a.messages));
  await txn.sendBatch({ topicMessages: [...records].map(([topic, messages]) => ({ topic, messages })), acks: -1 });
}

/** The messages of `pending` appends that carry some. */
export const alongsideOf = (pending: readonly { readonly alongside: Alongside | undefined }[]): Alongside[] =>
  pending.flatMap((p) => (p.alongside !== undefined && p.alongside.messages.length > 0 ? [p.alongside] : []));

/** Aborts a failed transaction; false when there was none or the abort failed too. */
export const aborted = (txn: Transaction | undefined): Promise<boolean> =>
  txn === undefined
    ? Promise.resolve(false)
    : txn.abort().then(
        () => true,
        () => false,
      );

/** A missing topic, as kafkajs's error ends its retries (the broker's answer in it or its causes). */
const isUnknownTopic = (error: unknown): boolean =>
  errorTypeIn(error, (type) => type === 'UNKNOWN_TOPIC_OR_PARTITION') !== undefined;

/**
 * The error outputs get when a transaction that carries them fails for a reason sending them again cannot
 * mend (a message refused for good, a topic that does not exist), or undefined for any other failure.
 */
export function alongsideRefusal(alongside: readonly Alongside[], error: unknown): SluiceError | undefined {
  if (alongside.length === 0) return undefined;
  const topics = [...new Set(alongside.flatMap((o) => o.messages.map((m) => m.topic)))].join(', ');
  if (isRefusal(error)) return publishError(topics, error) as SluiceError;
  if (isUnknownTopic(error))
    return new SluiceError('PUBLISH_REFUSED', `kafka store: publish to "${topics}" refused: ${reasonOf(error)}`, {
      cause: error,
    });
  return undefined;
}
