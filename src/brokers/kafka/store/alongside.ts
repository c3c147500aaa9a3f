import { SluiceError, reasonOf } from '../../../core/errors.js';
import type { Alongside } from '../../../core/ports.js';
import type { StoreClient, StoreTransaction } from './store-client.js';

/** The messages of `pending` appends that carry some. */
export const alongsideOf = (pending: readonly { readonly alongside: Alongside | undefined }[]): Alongside[] =>
  pending.flatMap((p) => (p.alongside !== undefined && p.alongside.messages.length > 0 ? [p.alongside] : []));

/** The topics outputs go to, each once, joined for an error's message. */
const topicsOf = (alongside: readonly Alongside[]): string =>
  [...new Set(alongside.flatMap((o) => o.messages.map((m) => m.topic)))].join(', ');

/**
 * The error outputs get when a transaction that carries them failed for a reason sending again cannot mend (a
 * message refused for good, a topic that does not exist), as `client` tells its errors; undefined for any other
 * failure.
 */
export function alongsideRefusal(
  client: StoreClient,
  alongside: readonly Alongside[],
  error: unknown,
): SluiceError | undefined {
  if (alongside.length === 0) return undefined;
  const topics = topicsOf(alongside);
  const refused = client.refusal(topics, error);
  if (refused !== undefined) return refused;
  if (client.isUnknownTopic(error))
    return new SluiceError('PUBLISH_REFUSED', `kafka store: publish to "${topics}" refused: ${reasonOf(error)}`, {
      cause: error,
    });
  return undefined;
}

/** Aborts a failed transaction; false when there was none or the abort failed too. */
export const aborted = (txn: StoreTransaction | undefined): Promise<boolean> =>
  txn === undefined
    ? Promise.resolve(false)
    : txn.abort().then(
        () => true,
        () => false,
      );
