/**
 * bench/exactly-once's raw side, a kafkajs transactional loop, and what both of its sides share: the messages,
 * the counts, and the drain that times them (see bench/exactly-once.ts for the method).
 */
import { Kafka, Partitioners, logLevel, type LogEntry, type Producer } from 'kafkajs';
import { PRODUCER_RETRY } from '../src/brokers/kafka/transactional-producer.js';
import { MAX_WAIT_MS, admin, brokers, createTopic, fromFirst, kafka, sleep, unique } from './publishing-sides.js';

/** kafkajs's CONCURRENT_TRANSACTIONS answer (a transaction begun while the last one's markers are written). */
export const CONCURRENT_TRANSACTIONS = /another concurrent operation on the same transaction/;

export interface In {
  readonly id: number;
  readonly n: number;
}
export interface Out {
  readonly id: number;
  readonly doubled: number;
}
export const transform = (v: In): Out => ({ id: v.id, doubled: v.n * 2 });

/** What one side's transactions did. */
export interface Counts {
  /** The consumer group whose offsets the transactions commit (known once the side joined). */
  group: string | undefined;
  commits: number;
  inputs: number;
  outputs: number;
  /** Time spent in transactions, from begin to committed, in ms, summed. */
  txMs: number;
  /** CONCURRENT_TRANSACTIONS answers kafkajs retried. */
  concurrent: number;
  /** Warnings and errors logged (Sluice: its logger; raw: kafkajs's errors other than the above). */
  complaints: string[];
}

export const counts = (): Counts => ({
  group: undefined,
  commits: 0,
  inputs: 0,
  outputs: 0,
  txMs: 0,
  concurrent: 0,
  complaints: [],
});

/** What a drain measured. */
export interface Side {
  /** Messages/s from the first message handled to all N offsets (and so all N outputs) committed. */
  readonly rate: number;
  /** This process's CPU time (user + system) per message, in microseconds, over the same span. */
  readonly cpuUs: number;
  /** Average inputs per transaction. */
  readonly perTx: number;
  /** Mean time of a transaction, begin to committed, ms. */
  readonly txMs: number;
  readonly commits: number;
  readonly concurrent: number;
  /** Messages on the output read committed, and distinct ids among them (both N: exactly once). */
  readonly read: number;
  readonly distinct: number;
  readonly complaints: readonly string[];
}

/** Resolves with the time at which `group`'s committed offsets of `input` add up to `n` (asked every 10 ms). */
async function committedHolds(
  group: () => string | undefined,
  input: string,
  n: number,
  started: () => number,
): Promise<number> {
  const deadline = performance.now() + 300_000;
  for (;;) {
    const groupId = group();
    // A coordinator not found yet (the group's first moments, the broker busy) is asked again.
    const fetched =
      groupId === undefined ? undefined : await admin.fetchOffsets({ groupId, topics: [input] }).catch(() => undefined);
    const sum = (fetched?.[0]?.partitions ?? []).reduce((s, p) => s + Math.max(0, Number(p.offset)), 0);
    if (sum >= n) return performance.now();
    if (performance.now() > deadline) throw new Error(`${input}: fewer than ${n} offsets committed after 300 s`);
    await sleep(started() === 0 ? 50 : 10);
  }
}

/** Reads `out` committed from the start until it has `n` distinct ids (then 500 ms more): messages and ids. */
async function readCommitted(out: string, n: number): Promise<{ read: number; distinct: number }> {
  const consumer = kafka.consumer({ groupId: unique('eos-check'), maxWaitTimeInMs: MAX_WAIT_MS });
  await consumer.connect();
  await consumer.subscribe({ topic: out, fromBeginning: true });
  const ids = new Set<number>();
  let read = 0;
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        read++;
        ids.add((JSON.parse(m.value!.toString('utf8')) as Out).id);
      }
    },
  });
  const deadline = performance.now() + 60_000;
  while (ids.size < n && performance.now() < deadline) await sleep(50);
  await sleep(500);
  await consumer.disconnect();
  return { read, distinct: ids.size };
}

/** Runs `start`, waits for `n` committed offsets, then `stop`, then reads the output; the rate from the first. */
export async function drain(
  input: string,
  out: string,
  n: number,
  c: Counts,
  start: (first: () => void) => Promise<void>,
  stop: () => Promise<void>,
): Promise<Side> {
  const span = await fromFirst(start, (started) => committedHolds(() => c.group, input, n, started));
  await stop();
  const { read, distinct } = await readCommitted(out, n);
  void admin.deleteTopics({ topics: [out] }).catch(() => undefined);
  return {
    rate: n / span.seconds,
    cpuUs: span.cpuUs / n,
    perTx: c.inputs / c.commits,
    txMs: c.txMs / c.commits,
    commits: c.commits,
    concurrent: c.concurrent,
    read,
    distinct,
    complaints: c.complaints,
  };
}

// ---- raw: a kafkajs transactional loop ----

/** A kafkajs client of the raw side's own, whose log counts the CONCURRENT_TRANSACTIONS answers retried. */
function rawKafka(c: Counts): Kafka {
  return new Kafka({
    clientId: 'bench-eos-raw',
    brokers: [brokers],
    logLevel: logLevel.ERROR,
    logCreator:
      () =>
      ({ log }: LogEntry) => {
        if (CONCURRENT_TRANSACTIONS.test(log.message)) c.concurrent++;
        else if (c.complaints.length < 5) c.complaints.push(log.message);
      },
  });
}

/**
 * Raw: a kafkajs consumer, `eachBatch` over the partitions at once with `autoCommit: false`, and a transactional
 * producer per input partition; per chunk of at most `chunk` inputs of a fetched batch (0: the whole batch), a
 * transaction: `sendBatch` of the outputs, `sendOffsets` of the chunk's last offset + 1, commit.
 */
export async function drainRaw(input: string, partitions: number, n: number, chunk: number): Promise<Side> {
  const out = unique('eos-raw-out');
  await createTopic(out, partitions);
  const group = unique('eos-raw');
  const c = counts();
  const client = rawKafka(c);
  const producers: Producer[] = await Promise.all(
    Array.from({ length: partitions }, async (_, p) => {
      const producer = client.producer({
        transactionalId: `${group}.${input}.${p}`,
        idempotent: true,
        maxInFlightRequests: 1,
        retry: PRODUCER_RETRY,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await producer.connect();
      await (await producer.transaction()).abort(); // InitProducerId before anything is timed
      return producer;
    }),
  );
  const consumer = client.consumer({ groupId: group, maxWaitTimeInMs: MAX_WAIT_MS });
  await consumer.connect();
  await consumer.subscribe({ topic: input, fromBeginning: true });
  c.group = group;
  return drain(
    input,
    out,
    n,
    c,
    (first) =>
      consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: partitions,
        // eslint-disable-next-line @typescript-eslint/unbound-method -- closures, though typed as methods
        eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
          if (batch.messages.length === 0) return;
          first();
          const producer = producers[batch.partition]!;
          const size = chunk > 0 ? chunk : batch.messages.length;
          for (let i = 0; i < batch.messages.length; i += size) {
            const taken = batch.messages.slice(i, i + size);
            const last = taken[taken.length - 1]!.offset;
            const messages = taken.map((m) => {
              const o = transform(JSON.parse(m.value!.toString('utf8')) as In);
              return { key: String(o.id), value: JSON.stringify(o) };
            });
            const t = performance.now();
            const transaction = await producer.transaction();
            try {
              await transaction.sendBatch({ topicMessages: [{ topic: out, messages }] });
              await transaction.sendOffsets({
                consumerGroupId: group,
                topics: [
                  { topic: input, partitions: [{ partition: batch.partition, offset: String(Number(last) + 1) }] },
                ],
              });
              await transaction.commit();
            } catch (error) {
              if (transaction.isActive()) await transaction.abort().catch(() => undefined);
              throw error;
            }
            c.txMs += performance.now() - t;
            c.commits++;
            c.inputs += taken.length;
            c.outputs += messages.length;
            resolveOffset(last);
            await heartbeat();
          }
        },
      }),
    async () => {
      await consumer.disconnect();
      await Promise.all(producers.map((p) => p.disconnect()));
    },
  );
}
