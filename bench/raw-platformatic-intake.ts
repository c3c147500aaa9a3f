/**
 * bench/kafka-pace (a)'s raw loop on @platformatic/kafka: the same work as its raw kafkajs loop, on the client
 * the app reads through when `BENCH_CLIENT` is `platformatic`. One consumer's messages stream over the P
 * partitions, a transactional producer per partition (a transactional ID each); per partition, one transaction
 * after another, each with up to `batch` of the messages read (their values sent to the partition of a changelog
 * topic), then `txn`: the offset of the last added to the transaction and commit; `outside`: commit, the offsets
 * committed by the consumer every second outside the transactions. The stream is paused while two transactions'
 * worth of messages a partition wait.
 */
import { Consumer, Producer, type Message } from '@platformatic/kafka';

export interface RawPlatformaticSettings {
  readonly brokers: string;
  readonly topic: string;
  readonly changelog: string;
  readonly groupId: string;
  readonly partitions: number;
  /** Messages per transaction at most. */
  readonly batch: number;
  /** Stops once this many messages are in committed transactions. */
  readonly count: number;
  readonly offsets: 'txn' | 'outside';
}

type Bytes = Message<Buffer, Buffer, Buffer, Buffer>;

/** Seconds from the first message read to the `count`th in a committed transaction. */
export async function rawPlatformaticIntake(s: RawPlatformaticSettings): Promise<number> {
  const base = { clientId: 'bench', bootstrapBrokers: [s.brokers] };
  const producers = Array.from(
    { length: s.partitions },
    (_, p) =>
      new Producer({
        ...base,
        transactionalId: `${s.changelog}-p${p}`,
        idempotent: true,
        // A transaction begun right after a commit is answered CONCURRENT_TRANSACTIONS for a few milliseconds:
        // retried soon, as the Kafka store's producers retry (the client's default waits a second).
        retries: 20,
        retryDelay: (_client, _operation, attempt) => Math.min(10 * 2 ** attempt, 1_000),
      }),
  );
  const consumer = new Consumer({ ...base, groupId: s.groupId, maxWaitTime: 100 });
  const stream = await consumer.consume({
    topics: [s.topic],
    mode: 'committed',
    fallbackMode: 'earliest',
    autocommit: s.offsets === 'outside' ? 1_000 : false,
  });
  const waiting: Bytes[][] = Array.from({ length: s.partitions }, () => []);
  const busy = new Array<boolean>(s.partitions).fill(false);
  let buffered = 0;
  let done = 0;
  let first = 0;
  let finish!: (seconds: number) => void;
  let fail!: (error: unknown) => void;
  const finished = new Promise<number>((resolve, reject) => ((finish = resolve), (fail = reject)));
  const high = 2 * s.batch * s.partitions;

  const loop = async (p: number): Promise<void> => {
    busy[p] = true;
    while (waiting[p]!.length > 0 && done < s.count) {
      const chunk = waiting[p]!.splice(0, s.batch);
      buffered -= chunk.length;
      if (stream.isPaused() && buffered < high / 2) stream.resume();
      const txn = await producers[p]!.beginTransaction();
      await txn.send({ messages: chunk.map((m) => ({ topic: s.changelog, partition: p, value: m.value })) });
      if (s.offsets === 'txn') {
        await txn.addConsumer(consumer);
        await txn.addOffset(chunk[chunk.length - 1]!);
      }
      await txn.commit();
      done += chunk.length;
      if (done >= s.count) finish((performance.now() - first) / 1000);
    }
    busy[p] = false;
  };

  stream.on('data', (m: Bytes) => {
    if (first === 0) first = performance.now();
    waiting[m.partition]!.push(m);
    if (++buffered >= high) stream.pause();
    if (!busy[m.partition]) loop(m.partition).catch(fail);
  });
  stream.on('error', fail);
  try {
    return await finished;
  } finally {
    await stream.close().catch(() => {});
    await consumer.close(true).catch(() => {});
    await Promise.all(producers.map((p) => p.close().catch(() => {})));
  }
}
