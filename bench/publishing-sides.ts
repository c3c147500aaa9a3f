/**
 * The two sides of bench/publishing, each beside a raw kafkajs loop doing the same work: draining a topic through
 * a transform whose outputs are published (`drainRaw`, `drainSluice`), and request/reply (`rawRequests`,
 * `sluiceRequests`). Consumers on both sides fetch with maxWaitTimeInMs 100 (the tests' KafkaBroker setting,
 * `consumer.maxWaitTimeMs: 100`); producers use kafkajs's default acks (all in-sync replicas).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Kafka, Partitioners, logLevel, type Message } from 'kafkajs';
import { App, silentLogger, subscriber, topic } from '../src/index.js';
import { KafkaBroker } from '../src/brokers/kafka/index.js';
import type { PlatformaticKafkaBroker } from '../src/brokers/platformatic/index.js';

export const MAX_WAIT_MS = 100;

export const brokers =
  process.env.KAFKA_BROKERS ??
  /KAFKA_BROKERS=(\S+)/.exec(execFileSync(process.execPath, ['scripts/kafka/start.mjs'], { encoding: 'utf8' }))![1]!;
export const kafka = new Kafka({ clientId: 'bench', brokers: [brokers], logLevel: logLevel.NOTHING });
export const admin = kafka.admin();
await admin.connect();
export const unique = (what: string): string => `bench-${what}-${randomBytes(4).toString('hex')}`;
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function createTopic(name: string, partitions: number): Promise<void> {
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: name, numPartitions: partitions, replicationFactor: 1 }],
  });
}

const dropTopics = (topics: string[]): Promise<unknown> => admin.deleteTopics({ topics }).catch(() => undefined);

/** The client Sluice's side runs on: `kafkajs` (the default), `platformatic` (KIP-848) or `classic` (its classic protocol). */
export const CLIENT = process.env.BENCH_CLIENT ?? 'kafkajs';

async function sluiceBroker(): Promise<KafkaBroker | PlatformaticKafkaBroker> {
  const consumer = { maxWaitTimeMs: MAX_WAIT_MS };
  if (CLIENT === 'kafkajs') return new KafkaBroker({ brokers: [brokers], logger: silentLogger, consumer });
  const { PlatformaticKafkaBroker } = await import('../src/brokers/platformatic/index.js');
  const groupProtocol = CLIENT === 'classic' ? 'classic' : 'consumer';
  return new PlatformaticKafkaBroker({ brokers: [brokers], logger: silentLogger, consumer, groupProtocol });
}

// ---- (1) consume → transform → publish ----

interface In {
  readonly id: number;
  readonly n: number;
}
interface Out {
  readonly id: number;
  readonly doubled: number;
}
const transform = (v: In): Out => ({ id: v.id, doubled: v.n * 2 });

/** A topic of `partitions` holding `n` messages `{ id, n }`, keyed by id. */
export async function preload(partitions: number, n: number): Promise<string> {
  const name = unique('pipe-in');
  await createTopic(name, partitions);
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  for (let i = 0; i < n; i += 5_000) {
    const messages: Message[] = [];
    for (let id = i; id < Math.min(n, i + 5_000); id++)
      messages.push({ key: String(id), value: JSON.stringify({ id, n: id }) });
    await producer.send({ topic: name, messages });
  }
  await producer.disconnect();
  return name;
}

/** What a drain measured: messages/s from the first message handled to the last output on the broker. */
export interface Drain {
  readonly rate: number;
  /** This process's CPU time (user + system) per message, in microseconds, over the same span. */
  readonly cpuUs: number;
}

/** Resolves with the time at which `name`'s partitions hold `n` messages in all (asked every 10 ms). */
async function outputHolds(name: string, n: number, started: () => number): Promise<number> {
  const deadline = performance.now() + 300_000;
  for (;;) {
    const offsets = await admin.fetchTopicOffsets(name);
    if (offsets.reduce((sum, p) => sum + Number(p.high), 0) >= n) return performance.now();
    if (performance.now() > deadline) throw new Error(`${name}: fewer than ${n} outputs after 300 s`);
    await sleep(started() === 0 ? 50 : 10);
  }
}

/**
 * Runs `start`, which calls `first` as it handles its first message, then waits for `done` (given the time
 * of that first message, 0 before it), which resolves with the time the work was done: the span between, in
 * seconds, and this process's CPU time (user + system) over it, in microseconds.
 */
export async function fromFirst(
  start: (first: () => void) => Promise<void>,
  done: (started: () => number) => Promise<number>,
): Promise<{ seconds: number; cpuUs: number }> {
  let t0 = 0;
  let cpu0 = process.cpuUsage();
  await start(() => {
    if (t0 !== 0) return;
    t0 = performance.now();
    cpu0 = process.cpuUsage();
  });
  const t1 = await done(() => t0);
  const cpu = process.cpuUsage(cpu0);
  return { seconds: (t1 - t0) / 1000, cpuUs: cpu.user + cpu.system };
}

/** Runs `start`, waits for `n` outputs on `out`, then `stop`; the rate from the first handled message. */
async function drain(
  out: string,
  n: number,
  start: (first: () => void) => Promise<void>,
  stop: () => Promise<void>,
): Promise<Drain> {
  const span = await fromFirst(start, (started) => outputHolds(out, n, started));
  await stop();
  void dropTopics([out]);
  return { rate: n / span.seconds, cpuUs: span.cpuUs / n };
}

/**
 * Raw: a kafkajs consumer, `eachBatch` over the partitions at once, that per fetched batch decodes and transforms
 * its messages, sends all the outputs in one `producer.send`, and only then resolves the batch's offsets
 * (committed by kafkajs's auto-commit): at least once.
 */
export async function drainRaw(input: string, partitions: number, n: number): Promise<Drain> {
  const out = unique('pipe-raw-out');
  await createTopic(out, partitions);
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  const consumer = kafka.consumer({ groupId: unique('pipe-raw'), maxWaitTimeInMs: MAX_WAIT_MS });
  await Promise.all([producer.connect(), consumer.connect()]);
  await consumer.subscribe({ topic: input, fromBeginning: true });
  return drain(
    out,
    n,
    (first) =>
      consumer.run({
        partitionsConsumedConcurrently: partitions,
        // eslint-disable-next-line @typescript-eslint/unbound-method -- closures, though typed as methods
        eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
          if (batch.messages.length === 0) return;
          first();
          const messages = batch.messages.map((m) => {
            const o = transform(JSON.parse(m.value!.toString('utf8')) as In);
            return { key: String(o.id), value: JSON.stringify(o) };
          });
          await producer.send({ topic: out, messages });
          resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
          await heartbeat();
        },
      }),
    async () => {
      await consumer.disconnect();
      await producer.disconnect();
    },
  );
}

/** Sluice: `subscriber(in, transform).publishTo(out).workers(workers)`, out keyed by id. */
export async function drainSluice(input: string, partitions: number, n: number, workers: number): Promise<Drain> {
  const out = unique('pipe-sluice-out');
  await createTopic(out, partitions);
  const inTopic = topic<In>(input);
  const outTopic = topic<Out>(out, { key: (o) => String(o.id) });
  const broker = await sluiceBroker();
  let first = (): void => {};
  const app = new App({ name: unique('pipe-sluice'), logger: silentLogger }).withBroker(broker, (b) =>
    b.include(
      subscriber(inTopic, (v) => {
        first();
        return transform(v);
      })
        .publishTo(outTopic)
        .workers(workers),
    ),
  );
  return drain(
    out,
    n,
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

// ---- (2) request/reply ----

/** One side of request/reply: `request` resolves with the reply. */
export interface Requester {
  request(n: number): Promise<unknown>;
  close(): Promise<void>;
}

interface Query {
  readonly id: number;
}
interface Answer {
  readonly id: number;
  readonly ok: boolean;
}

/** Sends 64 requests at once, twice: the groups joined and the connections made before anything is timed. */
async function warm(side: Requester): Promise<Requester> {
  for (let round = 0; round < 2; round++) await Promise.all(Array.from({ length: 64 }, (_, i) => side.request(-i)));
  return side;
}

/**
 * Sluice: a replier app (`subscriber(requests, q => ({ id, ok: true })).replies().workers(workers)` on a topic of
 * `partitions`) and a requester app calling `app.request`, each its own KafkaBroker; the requester's reply
 * topic (`<name>.replies`) of one partition, as the raw loop's.
 */
export async function sluiceRequests(partitions: number, workers: number): Promise<Requester> {
  const name = unique('rr-sluice-requests');
  await createTopic(name, partitions);
  const requests = topic<Query, Answer>(name);
  const requesterName = unique('rr-sluice-requester');
  await createTopic(`${requesterName}.replies`, 1);
  const brokers = [await sluiceBroker(), await sluiceBroker()] as const;
  const replier = new App({ name: unique('rr-sluice-replier'), logger: silentLogger }).withBroker(brokers[0], (b) =>
    b.include(
      subscriber(requests, (q) => ({ id: q.id, ok: true }))
        .replies()
        .workers(workers),
    ),
  );
  const requester = new App({ name: requesterName, logger: silentLogger }).withBroker(brokers[1], () => {});
  await Promise.all([replier.start(), requester.start()]);
  return warm({
    request: (n) => requester.request(requests, { id: n }, { timeoutMs: 60_000 }),
    async close() {
      await Promise.all([requester.stop(), replier.stop()]);
      await Promise.all(brokers.map((b) => b.close()));
      await dropTopics([name, `${requesterName}.replies`]);
    },
  });
}

/**
 * Raw: a requester producing `{ id }` to a requests topic of `partitions` with a correlation-id and a reply-to
 * header — the requests made in one turn in one `producer.send` (`coalesce`; else a send each) — and reading a
 * replies topic of one partition (a group of its own), matching replies by correlation id; a responder
 * consumer, `eachBatch` over the partitions at once, that per batch sends all its replies in one
 * `producer.send`, then resolves the batch's offsets.
 */
export async function rawRequests(partitions: number, coalesce: boolean): Promise<Requester> {
  const requests = unique('rr-raw-requests');
  const replies = unique('rr-raw-replies');
  await Promise.all([createTopic(requests, partitions), createTopic(replies, 1)]);
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  const responderProducer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  const replyConsumer = kafka.consumer({ groupId: unique('rr-raw-requester'), maxWaitTimeInMs: MAX_WAIT_MS });
  const responder = kafka.consumer({ groupId: unique('rr-raw-responder'), maxWaitTimeInMs: MAX_WAIT_MS });
  await Promise.all([producer, responderProducer, replyConsumer, responder].map((c) => c.connect()));
  const waiting = new Map<string, () => void>();

  await replyConsumer.subscribe({ topic: replies, fromBeginning: true });
  await replyConsumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        const id = m.headers?.['correlation-id']?.toString();
        const resolve = id === undefined ? undefined : waiting.get(id);
        if (resolve === undefined) continue;
        waiting.delete(id!);
        resolve();
      }
    },
  });
  await responder.subscribe({ topic: requests, fromBeginning: true });
  await responder.run({
    partitionsConsumedConcurrently: partitions,
    // eslint-disable-next-line @typescript-eslint/unbound-method -- closures, though typed as methods
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      if (batch.messages.length === 0) return;
      const byTopic = new Map<string, Message[]>();
      for (const m of batch.messages) {
        const q = JSON.parse(m.value!.toString('utf8')) as Query;
        const to = m.headers!['reply-to']!.toString();
        let list = byTopic.get(to);
        if (list === undefined) byTopic.set(to, (list = []));
        const answer: Answer = { id: q.id, ok: true };
        list.push({ value: JSON.stringify(answer), headers: { 'correlation-id': m.headers!['correlation-id']! } });
      }
      await responderProducer.sendBatch({
        topicMessages: [...byTopic].map(([t, messages]) => ({ topic: t, messages })),
      });
      resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
      await heartbeat();
    },
  });

  let queued: Message[] = [];
  const flush = (): void => {
    const messages = queued;
    queued = [];
    void producer.send({ topic: requests, messages });
  };
  let next = 0;
  return warm({
    request(n) {
      const id = `c-${next++}`;
      const done = new Promise<void>((resolve) => waiting.set(id, resolve));
      const message = { value: JSON.stringify({ id: n }), headers: { 'correlation-id': id, 'reply-to': replies } };
      if (!coalesce) void producer.send({ topic: requests, messages: [message] });
      else if (queued.push(message) === 1) setImmediate(flush);
      return done;
    },
    async close() {
      await Promise.all([replyConsumer.disconnect(), responder.disconnect()]);
      await Promise.all([producer.disconnect(), responderProducer.disconnect()]);
      await dropTopics([requests, replies]);
    },
  });
}
