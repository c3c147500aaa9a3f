import type { Consumer, RecordsBatch } from '@platformatic/kafka';
import { pk } from './client.js';

/** A transaction the broker says was aborted: its producer, and the offset of its first batch. */
export interface AbortedTransaction {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
}

/** Attribute bits of a record batch: written in a transaction, a control batch (a transaction's marker). */
const TRANSACTIONAL = 1 << 4;
export const CONTROL = 1 << 5;
/** A control record's type, in the third and fourth bytes of its key: 0 ends a transaction aborted. */
const isAbortMarker = (batch: RecordsBatch): boolean => batch.records[0]?.key?.readInt16BE(2) === 0;

/**
 * The batches of one fetch answer (`read_committed`) without those of aborted transactions, as Kafka's own
 * consumer tells them: the broker lists the aborted transactions the answer overlaps (producer, first offset);
 * a producer's transactional batches from that first offset on are aborted until the producer's next abort
 * marker, however many transactions of the same producer (the same transactional ID, a later epoch) were
 * committed before or after. An answer cut short by its byte limit can end before the marker: the batches up
 * to its end are aborted all the same. An aborted batch is kept with no records, and markers are kept, so that
 * a reader's position (the offset past an answer's last batch) moves past them.
 *
 * @platformatic/kafka 2.12.1 filters an answer itself, and wrongly: it drops a producer's batches from the
 * first offset to the producer's *last* abort marker in the answer, committed transactions between the two
 * included, and keeps the whole aborted transaction when its marker is not in the answer. A transactional ID
 * whose holders abort now and then (a fenced shard's writer, a crashed publisher) then loses committed
 * records at a reader. See {@link readCommitted}.
 */
export function dropAborted(
  batches: readonly RecordsBatch[],
  aborted: readonly AbortedTransaction[] | null | undefined,
): RecordsBatch[] {
  if (aborted === null || aborted === undefined || aborted.length === 0) return [...batches];
  const waiting = [...aborted].sort((a, b) =>
    a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0,
  );
  const abortedNow = new Set<bigint>();
  const kept: RecordsBatch[] = [];
  for (const batch of batches) {
    const last = batch.firstOffset + BigInt(batch.lastOffsetDelta);
    while (waiting.length > 0 && waiting[0]!.firstOffset <= last) abortedNow.add(waiting.shift()!.producerId);
    if (batch.attributes & CONTROL) {
      if (isAbortMarker(batch)) abortedNow.delete(batch.producerId);
      kept.push(batch);
    } else if (batch.attributes & TRANSACTIONAL && abortedNow.has(batch.producerId))
      kept.push({ ...batch, records: [] });
    else kept.push(batch);
  }
  return kept;
}

/** A fetch answer's partitions, as @platformatic/kafka parses them (the fields read here). */
interface FetchAnswer {
  readonly responses?: readonly {
    readonly partitions?: readonly {
      records: RecordsBatch[] | null;
      abortedTransactions: AbortedTransaction[] | null;
    }[];
  }[];
}

/** Filters an answer's partitions with {@link dropAborted}, leaving the client no aborted transaction to drop. */
function filterAnswer(answer: FetchAnswer | undefined): void {
  for (const topic of answer?.responses ?? [])
    for (const partition of topic.partitions ?? []) {
      const aborted = partition.abortedTransactions;
      if (aborted === null || aborted === undefined || aborted.length === 0) continue;
      if (partition.records !== null && partition.records !== undefined)
        partition.records = dropAborted(partition.records, aborted);
      partition.abortedTransactions = [];
    }
}

type Api = ((...args: unknown[]) => void) & { async?: unknown; key?: number; version?: number };
const wrapped = new WeakMap<Api, Api>();

/** The client's Fetch API, each answer filtered before the client sees it. */
function filteredFetch(api: Api): Api {
  let out = wrapped.get(api);
  if (out !== undefined) return out;
  out = Object.assign(
    (connection: unknown, ...args: unknown[]) => {
      const callback = args.pop() as (error: unknown, answer: unknown) => void;
      api(connection, ...args, (error: unknown, answer: FetchAnswer | undefined) => {
        filterAnswer(answer ?? (error as { response?: FetchAnswer } | undefined)?.response);
        callback(error, answer);
      });
    },
    { key: api.key, version: api.version },
  );
  wrapped.set(api, out);
  return out;
}

/**
 * Makes `consumer` read transactions as Kafka's own consumer does (see {@link dropAborted}): every answer to its
 * fetches, those of its messages stream and its `fetch()` alike, is filtered before the client's own filter,
 * which then finds nothing to drop. It takes the client's Fetch API through `kGetApi`, the hook
 * @platformatic/kafka exports for subclasses.
 */
export function readCommitted<C extends Consumer<Buffer, Buffer, Buffer, Buffer>>(consumer: C): C {
  const own = consumer[pk.kGetApi].bind(consumer) as (name: string, callback: (e: unknown, api?: Api) => void) => void;
  const hook = (name: string, callback: (error: unknown, api?: Api) => void): void =>
    own(name, (error, api) => callback(error, name === 'Fetch' && api !== undefined ? filteredFetch(api) : api));
  Object.defineProperty(consumer, pk.kGetApi, { value: hook, configurable: true, writable: true });
  return consumer;
}
