/**
 * bench/kafka-shard-log, on one Kafka broker in one run (started by scripts/kafka/start.mjs unless
 * KAFKA_BROKERS is set):
 *  (a) durable appends/s through `kafkaStore({ shards: 1 }).log(0).append(100-byte record)` with 1, 10, 100
 *      and 1,000 concurrent appenders, each looping `await append(...)` for a fixed wall time; beside a raw
 *      kafkajs transactional producer doing the same sends: the same appenders hand ready-made values of the
 *      same size (117 bytes: the store's 17-byte header and the record) to a minimal group commit (the values
 *      pending while a transaction is under way share the next: begin, send to the partition, commit).
 *      Fresh topics for every measurement.
 *  (b) restore of a shard of RESTORE_N records of 100 bytes and a snapshot of 100,000 keys (JSON): a new
 *      store's `open()` (which fences, reads the snapshot and the tail) + `readSnapshot()` + `replay()`,
 *      beside a raw kafkajs consumer reading the same changelog partition from its start to its end
 *      (read_committed, eachBatch, nothing decoded).
 * Rounds alternate raw and Sluice; the figure is the median of the ratios measured in the same round.
 *
 *   npm run bench:kafka-shard-log
 *   BENCH_SECONDS=3 BENCH_ROUNDS=5 BENCH_RESTORE_N=200000 npm run bench:kafka-shard-log
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { silentLogger } from '../src/index.js';
import { kafkaStore } from '../src/brokers/kafka/index.js';
import { PRODUCER_RETRY } from '../src/brokers/kafka/transactional-producer.js';
import { drive, fmt, median, range } from './stats.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RESTORE_N = Number(process.env.BENCH_RESTORE_N ?? 100_000);
const CONCURRENCY = [1, 10, 100, 1_000];
const RECORD = Buffer.alloc(100, 'x');
const VALUE = Buffer.alloc(117, 'x');

const brokers =
  process.env.KAFKA_BROKERS ??
  /KAFKA_BROKERS=(\S+)/.exec(execFileSync(process.execPath, ['scripts/kafka/start.mjs'], { encoding: 'utf8' }))![1]!;
const kafka = new Kafka({ clientId: 'bench', brokers: [brokers], logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const prefix = (what: string): string => `bench-${what}-${randomBytes(4).toString('hex')}`;
const store = (p: string) =>
  kafkaStore({
    brokers: [brokers],
    prefix: p,
    shards: 1,
    replicationFactor: 1,
    ownership: 'all',
    logger: silentLogger,
  });

/** The baseline: the smallest group commit over a transactional producer one would write by hand. */
class RawTransactions {
  private pending: (() => void)[] = [];
  private flushing = false;
  transactions = 0;
  records = 0;

  constructor(
    private readonly producer: Producer,
    private readonly topic: string,
  ) {}

  append(): Promise<void> {
    return new Promise((resolve) => {
      this.pending.push(resolve);
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      const txn = await this.producer.transaction();
      // In requests under 1,000,000 bytes, as the store sends them.
      for (let i = 0; i < batch.length; i += 7_000) {
        const n = Math.min(7_000, batch.length - i);
        await txn.send({
          topic: this.topic,
          acks: -1,
          messages: Array.from({ length: n }, () => ({ partition: 0, value: VALUE })),
        });
      }
      await txn.commit();
      this.transactions++;
      this.records += batch.length;
      for (const resolve of batch) resolve();
    }
    this.flushing = false;
  }
}

async function rawAppends(concurrency: number): Promise<{ rate: number; perTxn: number }> {
  const topic = prefix('raw');
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });
  const producer = kafka.producer({
    transactionalId: topic,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: PRODUCER_RETRY, // the store's: the first retry after 10 ms, not kafkajs's 300
  });
  await producer.connect();
  const raw = new RawTransactions(producer, topic);
  const { rate } = await drive(SECONDS, concurrency, () => raw.append());
  await producer.disconnect();
  await admin.deleteTopics({ topics: [topic] });
  return { rate, perTxn: raw.records / raw.transactions };
}

async function sluiceAppends(concurrency: number): Promise<number> {
  const p = prefix('log');
  const s = store(p);
  await s.open();
  const log = s.log(0);
  const { rate, count } = await drive(SECONDS, concurrency, () => log.append(RECORD));
  if (log.durableLsn() !== count) throw new Error(`durableLsn ${log.durableLsn()} after ${count} appends`);
  await s.close();
  await admin.deleteTopics({ topics: [`${p}.changelog`, `${p}.snapshots`] });
  return rate;
}

async function partA(): Promise<void> {
  console.log(
    `\n(a) durable appends/s, 100-byte records, ${SECONDS} s per measurement, median of ${ROUNDS} rounds, node ${process.version}, kafka at ${brokers}\n`,
  );
  console.log(
    '| appenders | raw transactions appends/s | raw records per transaction | Sluice appends/s | ratio (median, same round) | range of ratios |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|');
  for (const c of CONCURRENCY) {
    const raw: number[] = [];
    const sluice: number[] = [];
    const ratios: number[] = [];
    const perTxn: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let r: { rate: number; perTxn: number };
      let s: number;
      if (round % 2 === 0) {
        r = await rawAppends(c);
        s = await sluiceAppends(c);
      } else {
        s = await sluiceAppends(c);
        r = await rawAppends(c);
      }
      raw.push(r.rate);
      perTxn.push(r.perTxn);
      sluice.push(s);
      ratios.push(s / r.rate);
    }
    console.log(
      `| ${fmt(c)} | ${fmt(median(raw))} | ${median(perTxn).toFixed(1)} | ${fmt(median(sluice))} | ${median(ratios).toFixed(2)} | ${range(ratios)} |`,
    );
  }
}

async function rawRestore(topic: string): Promise<number> {
  const [end] = await admin.fetchTopicOffsets(topic);
  const high = Number(end!.high);
  const consumer = kafka.consumer({
    groupId: prefix('raw-restore'),
    readUncommitted: false,
    maxBytesPerPartition: 16 * 1024 * 1024,
    maxBytes: 64 * 1024 * 1024,
    maxWaitTimeInMs: 100,
  });
  const t0 = performance.now();
  let count = 0;
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await new Promise<void>((resolve) => {
    consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
      if (Number(e.payload.lastOffset) >= high - 1) resolve();
    });
    void consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        count += batch.messages.length;
      },
    });
  });
  const seconds = (performance.now() - t0) / 1000;
  await consumer.disconnect();
  return count / seconds;
}

async function sluiceRestore(p: string, expected: number): Promise<number> {
  const t0 = performance.now();
  const s = store(p);
  await s.open();
  const log = s.log(0);
  const snap = await log.readSnapshot();
  let count = 0;
  await log.replay((snap?.lsn ?? 0) + 1, () => count++);
  const seconds = (performance.now() - t0) / 1000;
  if (count !== expected) throw new Error(`replayed ${count}, expected ${expected}`);
  await s.close();
  return count / seconds;
}

async function partB(): Promise<void> {
  const p = prefix('restore');
  const s = store(p);
  await s.open();
  const log = s.log(0);
  const t0 = performance.now();
  for (let i = 0; i < RESTORE_N; i += 1_000) await Promise.all(Array.from({ length: 1_000 }, () => log.append(RECORD)));
  const writeRate = RESTORE_N / ((performance.now() - t0) / 1000);
  const keys = Array.from({ length: 100_000 }, (_, k) => [`key-${k}`, { n: k, at: 1_700_000_000_000 + k }, null]);
  const state = Buffer.from(JSON.stringify({ lsn: 1, keys }));
  const t1 = performance.now();
  await log.writeSnapshot(1, state); // covers only LSN 1: the tail is all but one record
  const snapMs = performance.now() - t1;
  await s.close();
  console.log(
    `\n(b) restore: ${fmt(RESTORE_N)} records of 100 bytes (written with 1,000 appenders at ${fmt(writeRate)}/s) and a snapshot of 100,000 keys, ${(state.length / 1e6).toFixed(1)} MB (written in ${fmt(snapMs)} ms), median of ${ROUNDS} rounds\n`,
  );
  const raw: number[] = [];
  const sluice: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let r: number;
    let q: number;
    if (round % 2 === 0) {
      r = await rawRestore(`${p}.changelog`);
      q = await sluiceRestore(p, RESTORE_N - 1);
    } else {
      q = await sluiceRestore(p, RESTORE_N - 1);
      r = await rawRestore(`${p}.changelog`);
    }
    raw.push(r);
    sluice.push(q);
    ratios.push(q / r);
  }
  console.log('| reader | records/s | ratio to raw (median, same round) | range of ratios |');
  console.log('|---|---:|---:|---:|');
  console.log(`| raw kafkajs consumer (read_committed, changelog only) | ${fmt(median(raw))} | 1.00 | |`);
  console.log(
    `| Sluice open() + readSnapshot() + replay() | ${fmt(median(sluice))} | ${median(ratios).toFixed(2)} | ${range(ratios)} |`,
  );
  await admin.deleteTopics({ topics: [`${p}.changelog`, `${p}.snapshots`] });
}

await partA();
await partB();
await admin.disconnect();
