/**
 * What bench/kafka-pace (b) restores: a pace store as a paced app leaves it after 2 events per key over K keys
 * (the second pass makes each shard snapshot: a host snapshots once its records since the last are twice its
 * keys) and one more event for a tenth of the keys (a tail after the snapshot).
 *
 * Built without `app.send`, whose 2.1 million calls at 1,000,000 keys take minutes here, in two steps:
 *
 * 1. {@link buildShards}: per shard, one after another, a {@link ShardHost} with the app's pace rules over a
 *    memoryStore log is given the records `Pacer.submit` makes for `app.send` (the key's shard, a run UUID
 *    when the event opens a window, the event's data by `encodeEvent`), the second pass ending with the
 *    host's `snapshot()` where the app's host would take it, then the tail's records. Kept of it: the
 *    snapshot's LSN and bytes, and the tail's records.
 * 2. {@link writeShards}: into Kafka, in the store's format by the store's own code: each snapshot by
 *    `snapshotMessages` (its chunks in transactions of at most 4 MiB, then its head in one of its own, as
 *    `KafkaShardLog.writeSnapshot` writes them) with a transactional producer of the shard's transactional
 *    id; then the store is opened (its log of each shard starts after the snapshot's LSN) and the tail is
 *    appended through `ShardLog.append`, `TAIL_PER_TRANSACTION` records a transaction.
 *
 * What differs from what the app leaves: no key is parked while the states are built (a shard's keys all stay
 * loaded, so its snapshot lists them in the order they were last applied, not the loaded ones first), and
 * the changelog never held the records the snapshot covers (the app's store deleted them: its low watermark
 * is past them, here it is 0; a restore reads from the low watermark either way). {@link checkBuild} compares
 * the snapshots and tails of both builds.
 */
import { randomUUID } from 'node:crypto';
import { Partitioners, type Kafka } from 'kafkajs';
import { App, ManualClock, MemoryBroker, memoryStore, silentLogger, subscriber, type Store } from '../src/index.js';
import { eventOf } from '../src/pace-stage/pace-event.js';
import { PRODUCER_RETRY } from '../src/brokers/kafka/transactional-producer.js';
import { HEAD_KEY, snapshotMessages } from '../src/brokers/kafka/store/kafka-snapshots.js';
import { parsePace } from '../src/declare/pace.js';
import { encodeEvent } from '../src/pace/codec.js';
import { EVENT, coordinatorKey, opensRun, paceRules, type PaceOutput, type PaceState } from '../src/pace/rules.js';
import { shardOf } from '../src/shard/shard-of.js';
import { ShardHost } from '../src/pace-stage/shard-host.js';

/** The paced subscriber's name and pace, and the clock's time, as the app of (b) has them. */
export const NAME = 'p';
export const PACE = { debounce: '1 hour' } as const;
export const T0 = 1_800_000_000_000;
/**
 * Records a shard's transaction of the tail carries: the app's 1,000 concurrent senders over 4 shards left
 * about 150 (134 to 136 changelog messages, a pack and a commit marker each, for 10,000 records at 100,000 keys).
 */
export const TAIL_PER_TRANSACTION = 150;
/** Records given to a host at once (one group commit of its memory log) in the two passes. */
const PASS_CHUNK = 5_000;
/** As `KafkaShardLog`: room kept in a request for Kafka's headers, and snapshot bytes a transaction carries at most. */
const OVERHEAD_BYTES = 1024;
const SNAPSHOT_BYTES_PER_TRANSACTION = 4 * 1024 * 1024;

/** The event the `pass`th pass sends to key number `i`. */
export const eventFor = (i: number, pass: number): { n: number; pass: number; amount: number } => ({
  n: i,
  pass,
  amount: 1999,
});
export const keyFor = (i: number): string => `customer-${i}`;

/** The app of (b) on `store`: a paced subscriber no window of which may close, a clock at T0. */
export function restoreApp(store: Store): App {
  const app = new App({ name: 'bench-restore', logger: silentLogger, store, clock: new ManualClock(T0) });
  return app.withBroker(new MemoryBroker(), (r) =>
    r.include(
      subscriber('t', () => {
        throw new Error('no window may close');
      })
        .name(NAME)
        .pace(PACE)
        .build(),
    ),
  );
}

/** What a restore finds of one shard: its snapshot and the records after it. */
export interface ShardContents {
  readonly lsn: number;
  readonly state: Uint8Array;
  readonly tail: readonly Uint8Array[];
}

/** Step 1 (see the header): every shard's snapshot and tail, for `keys` keys over `shards` shards. */
export async function buildShards(keys: number, shards: number, snapshotEvery: number): Promise<ShardContents[]> {
  const pace = parsePace(PACE, NAME);
  const rules = paceRules(new Map([[NAME, pace]]));
  const shardOfKey = new Uint8Array(keys);
  for (let i = 0; i < keys; i++) shardOfKey[i] = shardOf(coordinatorKey(NAME, keyFor(i)), shards);
  const out: ShardContents[] = [];
  for (let shard = 0; shard < shards; shard++) {
    const log = memoryStore({ shards }).log(shard);
    const host = new ShardHost<PaceState, PaceOutput>({
      log,
      rules,
      clock: new ManualClock(T0),
      onOutput: () => {
        throw new Error('no window may close');
      },
      maxLoadedKeys: 2 ** 30, // none parked: see the header
      snapshotEvery: Number.MAX_SAFE_INTEGER, // taken below, where the app's host would take it
    });
    await host.open();
    // As Pacer.submit makes an `app.send`'s record.
    const send = (i: number, pass: number): Promise<unknown> => {
      const key = coordinatorKey(NAME, keyFor(i));
      const at = host.now();
      const opens = opensRun(host.core.state(key), pace, at);
      const appended = { key: keyFor(i), event: eventFor(i, pass) };
      return host.submit({
        key,
        at,
        type: EVENT,
        data: encodeEvent(eventOf(NAME, pace, appended, opens ? randomUUID() : '')),
      });
    };
    const pass = async (to: number, n: number): Promise<void> => {
      let sent: Promise<unknown>[] = [];
      for (let i = 0; i < to; i++) {
        if (shardOfKey[i] !== shard) continue;
        sent.push(send(i, n));
        if (sent.length === PASS_CHUNK) {
          await Promise.all(sent);
          sent = [];
        }
      }
      await Promise.all(sent);
    };
    await pass(keys, 1);
    await pass(keys, 2);
    // Due in the app's host as its second pass ends: `snapshotEvery` records at least, and twice as many as keys.
    const records = host.core.appliedLsn;
    if (records < Math.max(snapshotEvery, 2 * host.core.keyCount))
      throw new Error(`shard ${shard}: no snapshot would be due (${records} records, ${host.core.keyCount} keys)`);
    if (!(await host.snapshot())) throw new Error(`shard ${shard}: the snapshot was not taken`);
    await pass(Math.ceil(keys / 10), 3);
    await host.close();
    const snapshot = (await log.readSnapshot())!;
    const tail: Uint8Array[] = [];
    await log.replay(snapshot.lsn + 1, (_, record) => tail.push(record));
    out.push({ lsn: snapshot.lsn, state: snapshot.state, tail });
  }
  return out;
}

/** Where step 2 writes: the store's topics' prefix, its settings, a kafkajs client. */
export interface RestoreTarget {
  readonly kafka: Kafka;
  readonly prefix: string;
  readonly maxMessageBytes: number;
  /** A kafkaStore of the prefix, `ownership: 'all'`, as the app has it. */
  readonly store: () => Store;
}

/** Step 2 (see the header): writes each shard's snapshot, then appends its tail through the store. */
export async function writeShards(target: RestoreTarget, shards: readonly ShardContents[]): Promise<void> {
  const owner = { app: 'bench-restore', subscribers: [NAME] };
  const creating = target.store();
  await creating.open(owner); // creates the topics as the store does
  await creating.close();
  const snapshots = `${target.prefix}.snapshots`;
  await Promise.all(
    shards.map(async (contents, shard) => {
      const producer = target.kafka.producer({
        transactionalId: `${target.prefix}.shard-${shard}`,
        idempotent: true,
        maxInFlightRequests: 1,
        retry: PRODUCER_RETRY,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await producer.connect();
      const { chunks, headValue } = snapshotMessages(
        contents.lsn,
        contents.state,
        target.maxMessageBytes - OVERHEAD_BYTES,
      );
      for (let i = 0; i < chunks.length;) {
        const txn = await producer.transaction();
        for (let bytes = 0; i < chunks.length && (bytes === 0 || bytes < SNAPSHOT_BYTES_PER_TRANSACTION); i++) {
          await txn.send({ topic: snapshots, acks: -1, messages: [{ ...chunks[i]!, partition: shard }] });
          bytes += chunks[i]!.value.length;
        }
        await txn.commit();
      }
      const txn = await producer.transaction();
      await txn.send({ topic: snapshots, acks: -1, messages: [{ key: HEAD_KEY, value: headValue, partition: shard }] });
      await txn.commit();
      await producer.disconnect();
    }),
  );
  const store = target.store();
  await store.open(owner);
  try {
    await Promise.all(
      shards.map(async (contents, shard) => {
        const log = store.log(shard);
        if (log.durableLsn() !== contents.lsn)
          throw new Error(
            `shard ${shard}: the store opened at LSN ${log.durableLsn()}, not the snapshot's ${contents.lsn}`,
          );
        for (let i = 0; i < contents.tail.length; i += TAIL_PER_TRANSACTION)
          await Promise.all(contents.tail.slice(i, i + TAIL_PER_TRANSACTION).map((r) => log.append(r)));
      }),
    );
  } finally {
    await store.close();
  }
}

/** `senders` loops sending one event to each of keys `from`..`to` with `app.send`. */
async function sendAll(app: App, from: number, to: number, pass: number, senders: number): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: senders }, async () => {
      for (let i = next++; i < to; i = next++) await app.send(NAME, { key: keyFor(i), event: eventFor(i, pass) });
    }),
  );
}

/**
 * The store filled by the app itself, with `app.send` from 1,000 senders (what (b) did before, and does with
 * `BENCH_RESTORE_SETUP=sends`). Returns the seconds it took.
 */
export async function sendRestoreStore(store: Store, keys: number): Promise<number> {
  const app = restoreApp(store);
  await app.start();
  const t0 = performance.now();
  await sendAll(app, 0, keys, 1, 1_000);
  await sendAll(app, 0, keys, 2, 1_000);
  await app.idle();
  await new Promise((resolve) => setTimeout(resolve, 500)); // the snapshots, begun when the pass's last appends were durable
  await sendAll(app, 0, Math.ceil(keys / 10), 3, 1_000);
  const seconds = (performance.now() - t0) / 1000;
  await app.stop(); // waits for the snapshots under way
  return seconds;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString().replace(UUID, 'UUID');

/** A shard's snapshot LSN, its entries and its tail's records, as texts, run UUIDs masked, sorted. */
function comparable(contents: ShardContents): { lsn: number; entries: string[]; tail: string[] } {
  const { keys } = JSON.parse(Buffer.from(contents.state).toString()) as { keys: unknown[] };
  return {
    lsn: contents.lsn,
    entries: keys.map((e) => JSON.stringify(e).replace(UUID, 'UUID')).sort(),
    tail: contents.tail.map(text).sort(),
  };
}

/**
 * Builds `keys` keys both ways, the app's on a memoryStore of 4 shards, and throws unless every shard has the
 * same snapshot LSN, the same snapshot entries (in any order) and the same tail records, run UUIDs aside.
 */
export async function checkBuild(keys: number): Promise<void> {
  const built = await buildShards(keys, 4, 1_000);
  const sent = Object.assign(memoryStore({ shards: 4 }), { snapshotEvery: 1_000 });
  await sendRestoreStore(sent, keys);
  for (let shard = 0; shard < 4; shard++) {
    const log = sent.log(shard);
    const snapshot = await log.readSnapshot();
    if (!snapshot) throw new Error(`shard ${shard}: the app took no snapshot`);
    const tail: Uint8Array[] = [];
    await log.replay(snapshot.lsn + 1, (_, record) => tail.push(record));
    const x = comparable(built[shard]!);
    const y = comparable({ ...snapshot, tail });
    if (x.lsn !== y.lsn) throw new Error(`shard ${shard}: snapshot LSN ${x.lsn} built, ${y.lsn} sent`);
    if (x.entries.join('\n') !== y.entries.join('\n'))
      throw new Error(
        `shard ${shard}: the snapshots' entries differ (${x.entries.length} built, ${y.entries.length} sent)`,
      );
    if (x.tail.join('\n') !== y.tail.join('\n'))
      throw new Error(`shard ${shard}: the tails differ (${x.tail.length} built, ${y.tail.length} sent)`);
  }
}
