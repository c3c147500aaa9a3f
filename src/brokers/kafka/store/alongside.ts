import type { Alongside } from '../../../core/ports.js';
import type { StoreTransaction } from './store-client.js';

/** The messages of `pending` appends that carry some. */
export const alongsideOf = (pending: readonly { readonly alongside: Alongside | undefined }[]): Alongside[] =>
  pending.flatMap((p) => (p.alongside !== undefined && p.alongside.messages.length > 0 ? [p.alongside] : []));

/** The topics outputs go to, each once, joined for an error's message. */
export const topicsOf = (alongside: readonly Alongside[]): string =>
  [...new Set(alongside.flatMap((o) => o.messages.map((m) => m.topic)))].join(', ');

/** Aborts a failed transaction; false when there was none or the abort failed too. */
export const aborted = (txn: StoreTransaction | undefined): Promise<boolean> =>
  txn === undefined
    ? Promise.resolve(false)
    : txn.abort().then(
        () => true,
        () => false,
      );
