/**
 * The Kafka side of bench/peers/streams.ts: the input it writes (a backlog, a paced stream, the trailing
 * events per partition) and the results it reads back. Every input record has key k and value
 * {"seq":n,"ts":ms}, its Kafka timestamp ts; keys go to partitions by murmur2 (kafkajs's default
 * partitioner, as Java producers and Sluice's `partitionOf` pick them), so a key's partition is its shard.
 */
import { Kafka, Partitioners, logLevel, type Admin, type PartitionMetadata, type Producer } from 'kafkajs';

/** Keys of the trailing events (one per partition) start with this; neither side makes a result for them. */
export const TICK_PREFIX = 'tick-';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface Io {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly producer: Producer;
}

export async function connect(brokers: string): Promise<Io> {
  const kafka = new Kafka({ clientId: 'bench-streams', brokers: [brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await admin.connect();
  await producer.connect();
  return { kafka, admin, producer };
}

/**
 * Creates the topics and waits until each partition has a leader in the metadata (kafkajs's own wait gives
 * up on UNKNOWN_TOPIC_OR_PARTITION, which a loaded broker answers for a while after the create).
 */
export async function createTopics(io: Io, topics: string[], partitions: number): Promise<void> {
  await io.admin.createTopics({
    waitForLeaders: false,
    topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })),
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await io.admin
      .fetchTopicMetadata({ topics })
      .then((m) =>
        m.topics.every((t) => t.partitions.length === partitions && t.partitions.every((p) => p.leader >= 0)),
      )
      .catch(() => false);
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`topics ${topics.join(', ')} have no leaders after 60 s`);
    await sleep(200);
  }
}

/**
 * Polls `group`'s committed offsets of `topic` every 100 ms until each partition's reaches `ends` (the end
 * offsets of what was sent); resolves with the time it saw that, or undefined once `stop` is set.
 */
export async function committedAt(
  io: Io,
  group: string,
  topic: string,
  ends: Map<number, number>,
  stopped: () => boolean,
): Promise<number | undefined> {
  while (!stopped()) {
    const got = await io.admin.fetchOffsets({ groupId: group, topics: [topic] }).catch(() => []);
    const offsets = new Map((got[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    if ([...ends].every(([p, end]) => (offsets.get(p) ?? -1) >= end)) return Date.now();
    await sleep(100);
  }
  return undefined;
}

/** The end offset of each partition of `topic`. */
export async function endOffsets(io: Io, topic: string): Promise<Map<number, number>> {
  return new Map((await io.admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.high)]));
}

/** Deletes every topic whose name starts with `prefix` (the run's own and the Streams app's internal ones). */
export async function deleteTopicsOf(io: Io, prefix: string): Promise<void> {
  const topics = (await io.admin.listTopics()).filter((t) => t.startsWith(prefix));
  if (topics.length) await io.admin.deleteTopics({ topics }).catch(() => undefined);
}

/** One key per partition that murmur2 puts in that partition: `tick-<n>` for the smallest n that does. */
export function tickKeys(partitions: number): string[] {
  const pick = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 0 }));
  const keys: string[] = [];
  for (let n = 0; keys.filter(Boolean).length < partitions; n++) {
    const key = `${TICK_PREFIX}${n}`;
    const p = pick({
      topic: 't',
      partitionMetadata: partitionMetadata as PartitionMetadata[],
      message: { key, value: null },
    });
    keys[p] ??= key;
  }
  return keys;
}

const record = (key: string, seq: number, ts: number) => ({
  key,
  value: `{"seq":${seq},"ts":${ts}}`,
  timestamp: String(ts),
});

/**
 * The backlog: `perKey` events for each of `keys` keys (k0…), interleaved (seq 0 of every key, then seq 1…),
 * in sends of 2,000, as fast as kafkajs goes. Event time is `eventTime0 + seq × 10 ms`: each key's events are
 * one session for any gap above 10 ms, and it lies in the past, so the first trailing event (stamped now)
 * closes every backlog window in Kafka Streams.
 */
export async function sendBacklog(io: Io, topic: string, keys: number, perKey: number, eventTime0: number) {
  let messages = [];
  for (let seq = 0; seq < perKey; seq++)
    for (let k = 0; k < keys; k++) {
      messages.push(record(`k${k}`, seq, eventTime0 + seq * 10));
      if (messages.length === 2_000) {
        await io.producer.send({ topic, acks: 1, messages });
        messages = [];
      }
    }
  if (messages.length) await io.producer.send({ topic, acks: 1, messages });
}

/**
 * A paced stream: `perKey` events for each of `keys` keys named `<prefix><i>`, interleaved, `perSecond` in
 * all (in sends every 20 ms), each stamped with the time its send was built. `onSent(count)` after each send.
 */
export async function sendPaced(
  io: Io,
  topic: string,
  opts: { prefix: string; keys: number; perKey: number; perSecond: number; onSent?: (count: number) => void },
): Promise<void> {
  const total = opts.keys * opts.perKey;
  const step = Math.max(1, Math.round(opts.perSecond / 50));
  const t0 = performance.now();
  for (let i = 0; i < total; i += step) {
    const wait = t0 + (i / opts.perSecond) * 1000 - performance.now();
    if (wait > 0) await sleep(wait);
    const ts = Date.now();
    const messages = [];
    for (let j = i; j < Math.min(total, i + step); j++)
      messages.push(record(`${opts.prefix}${j % opts.keys}`, Math.floor(j / opts.keys), ts));
    await io.producer.send({ topic, acks: 1, messages });
    opts.onSent?.(Math.min(total, i + step));
  }
}

/**
 * The trailing events: one per partition every `everyMs`, stamped now, until `stop()` resolves. They move
 * Kafka Streams' stream time on (suppress closes a window only once a later record of its partition is
 * read); Sluice takes them too (its windows close on its clock) and makes no result for them.
 */
export function startTicks(io: Io, topic: string, partitions: number, everyMs = 100): { stop(): Promise<void> } {
  const keys = tickKeys(partitions);
  let on = true;
  const loop = (async () => {
    for (let n = 0; on; n++) {
      const ts = Date.now();
      await io.producer
        .send({ topic, acks: 1, messages: keys.map((key) => record(key, n, ts)) })
        .catch(() => undefined);
      await sleep(everyMs);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
    },
  };
}

/** A result as both drivers write it, with the time this process read it. */
export interface Result {
  readonly key: string;
  readonly id: string;
  readonly count: number;
  readonly lastSeq: number;
  readonly lastTs: number;
  readonly seqs?: number[];
  readonly readAt: number;
}

/** Reads `topic` from its start (read_committed: what Kafka Streams' transactions committed) into `into`. */
export async function readResults(io: Io, topic: string, into: Result[]): Promise<{ stop(): Promise<void> }> {
  const consumer = io.kafka.consumer({ groupId: `${topic}-reader`, maxWaitTimeInMs: 50, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const readAt = Date.now();
      for (const m of batch.messages)
        if (m.value) into.push({ ...(JSON.parse(m.value.toString('utf8')) as Omit<Result, 'readAt'>), readAt });
    },
  });
  return { stop: () => consumer.disconnect() };
}
