/**
 * bench/exactly-once: consume → transform → publish in Kafka transactions, on one Kafka broker (started by
 * scripts/kafka/start.mjs unless KAFKA_BROKERS is set), beside a raw kafkajs transactional loop doing the same
 * work, measured in the same run (the raw side in bench/exactly-once-raw.ts, the helpers in
 * bench/publishing-sides.ts).
 *
 * Each round preloads a new input topic of P partitions with N small JSON messages `{ id, n }`, keyed by id (as
 * bench/publishing), and each side drains it into `{ id, doubled: n * 2 }` on a new output topic of P partitions
 * (keyed by id), in a group of its own.
 *  Sluice: `subscriber(in, transform).publishTo(out).workers(WORKERS).exactlyOnce()`: per input partition, what
 *      finished is published with its offsets in one transaction, one transaction of a partition at a time.
 *      Counted by wrapping what `KafkaBroker.transactions` returns: its commits, and the inputs each covered.
 *  Raw: a kafkajs consumer, `eachBatch` over the partitions at once, `autoCommit: false`, and per input
 *      partition a transactional producer (`transactionalId` of its own, idempotent, maxInFlightRequests 1, the
 *      retry settings of Sluice's producers: PRODUCER_RETRY). Per fetched batch, in chunks of at most CHUNK
 *      inputs: a transaction, `sendBatch` of the outputs, `sendOffsets` of the chunk's last offset + 1, commit.
 *      CHUNK (BENCH_RAW_CHUNK) defaults to the Sluice side's average inputs per transaction, as last measured
 *      (Sluice runs first in rounds 1, 3, …); `0`: whole fetched batches.
 * The Sluice side runs on each client of BENCH_CLIENTS (comma-separated; default `kafkajs`): `kafkajs`
 * (sluice/kafka), `classic` and `consumer` (sluice/kafka/platformatic under that group protocol; Node.js 22.22 or
 * 24.6 and later), each against the same round's raw loop.
 * Rate from the first message handled to the time the group's committed offsets of the input (asked every 10 ms)
 * add up to N: an offset commits with its outputs, so all N outputs are committed then. Beside it this
 * process's CPU per message, the inputs per transaction, the mean time of a transaction and the
 * CONCURRENT_TRANSACTIONS answers kafkajs retried. After each drain (not timed) a read_committed consumer checks
 * that the output holds N messages, N distinct ids. Consumers fetch with maxWaitTimeInMs 100. Figures are
 * medians of rounds, ratios those of the same round (Sluice/raw).
 *
 *   npm run bench:exactly-once
 *   BENCH_ROUNDS=5 BENCH_N=50000 BENCH_WORKERS=1024 BENCH_RAW_CHUNK=0 npm run bench:exactly-once
 *   BENCH_CLIENTS=kafkajs,classic,consumer npm run bench:exactly-once   # on Node.js 22.22 / 24.6 or later
 */
import { loadavg } from 'node:os';
import { App, subscriber, topic, type Broker, type InputTransactions, type Logger } from '../src/index.js';
import { KafkaBroker } from '../src/brokers/kafka/index.js';
import { fmt, median, range } from './stats.js';
import { MAX_WAIT_MS, admin, brokers, createTopic, preload, unique } from './publishing-sides.js';
import {
  CONCURRENT_TRANSACTIONS,
  counts,
  drain,
  drainRaw,
  transform,
  type Counts,
  type In,
  type Out,
  type Side,
} from './exactly-once-raw.js';

const P = Number(process.env.BENCH_PARTITIONS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const N = Number(process.env.BENCH_N ?? 30_000);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 256);
/** Unset: the Sluice side's average inputs per transaction, as last measured; `0`: whole fetched batches. */
const RAW_CHUNK = process.env.BENCH_RAW_CHUNK === undefined ? undefined : Number(process.env.BENCH_RAW_CHUNK);
const CLIENT_NAMES = ['kafkajs', 'classic', 'consumer'] as const;
type Client = (typeof CLIENT_NAMES)[number];
const CLIENTS = (process.env.BENCH_CLIENTS ?? 'kafkajs').split(',').map((c) => {
  if (!(CLIENT_NAMES as readonly string[]).includes(c)) throw new Error(`BENCH_CLIENTS: unknown client ${c}`);
  return c as Client;
});
const CLIENT_LABEL: Record<Client, string> = {
  kafkajs: 'kafkajs',
  classic: '@platformatic/kafka, classic',
  consumer: '@platformatic/kafka, KIP-848',
};

const ms = (x: number): string => x.toFixed(1);
const ratio = (x: number): string => x.toFixed(2);
const load = (): string => loadavg()[0]!.toFixed(1);

// ---- Sluice: `.exactlyOnce()` ----

/** A logger that keeps the warnings and errors (a few), and counts kafkajs's CONCURRENT_TRANSACTIONS answers. */
function countingLogger(c: Counts): Logger {
  const logger: Logger = {
    debug(message) {
      if (CONCURRENT_TRANSACTIONS.test(message)) c.concurrent++;
    },
    info() {},
    warn(message) {
      if (c.complaints.length < 5) c.complaints.push(`warn: ${message}`);
    },
    error(message) {
      if (c.complaints.length < 5) c.complaints.push(`error: ${message}`);
    },
    child: () => logger,
  };
  return logger;
}

/** Wraps what `broker.transactions` returns: counts its commits, the inputs and outputs each covered, their time. */
function countTransactions(
  broker: Broker & { transactions(group: string, topic: string): InputTransactions },
  c: Counts,
): void {
  const transactions = broker.transactions.bind(broker);
  broker.transactions = (group: string, topicName: string): InputTransactions => {
    c.group = group;
    const tx = transactions(group, topicName);
    /** Where each partition's next transaction starts: the offset opened at, then the last committed. */
    const from = new Map<number, number>();
    return {
      async open(partition) {
        const offset = await tx.open(partition);
        from.set(partition, offset);
        return offset;
      },
      async commit(partition, offset, messages) {
        const t = performance.now();
        await tx.commit(partition, offset, messages);
        c.txMs += performance.now() - t;
        c.commits++;
        c.inputs += offset - (from.get(partition) ?? 0);
        c.outputs += messages.length;
        from.set(partition, offset);
      },
      release: (partition) => tx.release(partition),
    };
  };
}

/** Sluice: `subscriber(in, transform).publishTo(out).workers(workers).exactlyOnce()`, out keyed by id. */
/** A broker of `client` for the Sluice side. */
async function brokerOf(client: Client, logger: Logger) {
  const settings = { brokers: [brokers], logger, consumer: { maxWaitTimeMs: MAX_WAIT_MS } };
  if (client === 'kafkajs') return new KafkaBroker(settings);
  const { PlatformaticKafkaBroker } = await import('../src/brokers/platformatic/index.js');
  return new PlatformaticKafkaBroker({ ...settings, groupProtocol: client });
}

async function drainSluice(
  client: Client,
  input: string,
  partitions: number,
  n: number,
  workers: number,
): Promise<Side> {
  const out = unique('eos-sluice-out');
  await createTopic(out, partitions);
  const inTopic = topic<In>(input);
  const outTopic = topic<Out>(out, { key: (o) => String(o.id) });
  const c = counts();
  const logger = countingLogger(c);
  const broker = await brokerOf(client, logger);
  countTransactions(broker, c);
  let first = (): void => {};
  const app = new App({ name: unique('eos-sluice'), logger }).withBroker(broker, (b) =>
    b.include(
      subscriber(inTopic, (v) => {
        first();
        return transform(v);
      })
        .publishTo(outTopic)
        .workers(workers)
        .exactlyOnce(),
    ),
  );
  return drain(
    input,
    out,
    n,
    c,
    async (f) => {
      first = f;
      await app.start();
    },
    async () => {
      await app.stop();
      await broker.close();
    },
  );
}

// ---- the rounds ----

console.log(
  `\nbench/exactly-once: ${P} partitions, ${fmt(N)} messages a round, Sluice workers(${WORKERS}).exactlyOnce() on ${CLIENTS.join(', ')}, raw chunk ${RAW_CHUNK === undefined ? "Sluice's inputs a transaction" : RAW_CHUNK === 0 ? 'a fetched batch' : fmt(RAW_CHUNK)}; ${ROUNDS} rounds, node ${process.version}, kafka at ${brokers}, 1-minute load ${load()}\n`,
);

interface Round {
  readonly raw: Side;
  readonly sluice: ReadonlyMap<Client, Side>;
  readonly chunk: number;
}
const rounds: Round[] = [];
let sluicePerTx: number | undefined;
const side = (x: Side): string =>
  `${fmt(x.rate)}/s (${ms(x.cpuUs)} µs CPU a message, ${fmt(x.commits)} transactions of ${ms(x.perTx)} inputs, ${ms(x.txMs)} ms each, ${x.concurrent} CONCURRENT_TRANSACTIONS retried; read committed ${fmt(x.read)}, ${fmt(x.distinct)} distinct)`;
for (let round = 0; round < ROUNDS; round++) {
  const input = await preload(P, N);
  const chunk = (): number => RAW_CHUNK ?? Math.max(1, Math.round(sluicePerTx!));
  const sluice = new Map<Client, Side>();
  const sluiceSides = async (): Promise<void> => {
    for (const client of CLIENTS) {
      const x = await drainSluice(client, input, P, N, WORKERS);
      sluice.set(client, x);
      if (client === CLIENTS[0]) sluicePerTx = x.perTx;
    }
  };
  let raw: Side;
  let used: number;
  // Sluice first in rounds 1, 3, …: the raw loop's chunk is the (first) Sluice side's inputs a transaction, as
  // last measured.
  if (round % 2 === 0) {
    await sluiceSides();
    raw = await drainRaw(input, P, N, (used = chunk()));
  } else {
    raw = await drainRaw(input, P, N, (used = chunk()));
    await sluiceSides();
  }
  await admin.deleteTopics({ topics: [input] }).catch(() => undefined);
  rounds.push({ raw, sluice, chunk: used });
  console.log(`  round ${round + 1}: raw (chunk ${used === 0 ? 'a batch' : fmt(used)}) ${side(raw)}`);
  for (const [client, x] of sluice)
    console.log(`    Sluice on ${CLIENT_LABEL[client]} ${side(x)}, ratio ${ratio(x.rate / raw.rate)}`);
  for (const [name, x] of [['raw', raw] as const, ...[...sluice].map(([c, x]) => [`Sluice ${c}`, x] as const)])
    for (const line of x.complaints) console.log(`    ${name} logged: ${line}`);
}

// ---- the table ----

const med = (f: (r: Round) => number): number => median(rounds.map(f));
console.log(
  `\nconsume → transform → publish in transactions, ${fmt(N)} messages over ${P} partitions (median of ${ROUNDS} rounds; ratio Sluice/raw of the same round)\n`,
);
console.log(
  '| loop | msgs/s | CPU µs a message (this process) | inputs a transaction | ms a transaction | ratio Sluice/raw | range of ratios |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|');
console.log(
  `| raw kafkajs eachBatch, a transaction a chunk (chunk ${fmt(med((r) => r.chunk))}) | ${fmt(med((r) => r.raw.rate))} | ${ms(med((r) => r.raw.cpuUs))} | ${ms(med((r) => r.raw.perTx))} | ${ms(med((r) => r.raw.txMs))} | 1.00 | |`,
);
const met: boolean[] = [];
for (const client of CLIENTS) {
  const of = (r: Round): Side => r.sluice.get(client)!;
  const ratios = rounds.map((r) => of(r).rate / r.raw.rate);
  met.push(median(ratios) >= 0.8);
  console.log(
    `| Sluice on ${CLIENT_LABEL[client]}, \`.publishTo(out).workers(${WORKERS}).exactlyOnce()\` | ${fmt(med((r) => of(r).rate))} | ${ms(med((r) => of(r).cpuUs))} | ${ms(med((r) => of(r).perTx))} | ${ms(med((r) => of(r).txMs))} | ${ratio(median(ratios))} | ${range(ratios)} |`,
  );
}
const exact = rounds.every((r) => [r.raw, ...r.sluice.values()].every((x) => x.read === N && x.distinct === N));
console.log(
  `\noutputs read committed: ${exact ? `${fmt(N)} messages, ${fmt(N)} distinct ids, on every output` : 'NOT exactly N on every output (see the rounds)'}; target ratio ≥ 0.8: ${met.map((m, i) => `${CLIENTS[i]} ${m ? 'met' : 'not met'}`).join(', ')}`,
);

console.log(`\n1-minute load at the end: ${load()}`);
await admin.disconnect();
