/**
 * The Kafka consumer's batches of a requests topic (`ConsumeRequest.requests`), without a broker: a fetched
 * batch is handed to `handle` in runs, and committed once, as far as `handle` said it handled — never a
 * message it did not handle, nor one after it; a revoke between two runs leaves the rest for the next owner.
 */
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { RequestBatches } from '../../../../src/brokers/kafka/consumer/request-batches.js';
import type { InboundMessage } from '../../../../src/core/message.js';
import { silentLogger } from '../../../../src/index.js';

const TOPIC = 'app.sub.requests';
const PARTITION = 2;

function record(offset: number): KafkaMessage {
  return {
    key: null,
    value: Buffer.from(`request ${offset}`),
    timestamp: '0',
    attributes: 0,
    offset: String(offset),
    headers: {},
  };
}

/** A RequestBatches over a fake kafkajs consumer; `handle` decides what each run handles. */
function setup(handle: (messages: readonly InboundMessage[]) => Promise<number>, perRun = 3) {
  const owned = new Set([PARTITION]);
  const runs: number[][] = [];
  const commits: { partition: number; offset: string }[][] = [];
  const resolved: string[] = [];
  let beats = 0;
  const consumer = {
    commitOffsets: async (offsets: { topic: string; partition: number; offset: string }[]) => {
      commits.push(offsets.map(({ partition, offset }) => ({ partition, offset })));
    },
  };
  const batches = new RequestBatches({
    topic: TOPIC,
    handle: (partition, messages) => {
      expect(partition).toBe(PARTITION);
      runs.push(messages.map((m) => m.offset));
      return handle(messages);
    },
    consumer: () => consumer as never,
    owned: () => owned,
    heartbeatIntervalMs: 0,
    perRun,
    log: silentLogger,
    closing: () => false,
    assigned: async () => {},
    beat: async (heartbeat) => {
      beats++;
      await heartbeat();
    },
  });
  const eachBatch = (offsets: number[]) =>
    batches.eachBatch({
      batch: { topic: TOPIC, partition: PARTITION, messages: offsets.map(record) },
      resolveOffset: (offset: string) => resolved.push(offset),
      heartbeat: async () => {},
      isRunning: () => true,
      isStale: () => false,
    } as unknown as EachBatchPayload);
  return { owned, runs, commits, resolved, eachBatch, beats: () => beats };
}

describe('kafka: the batches of a requests topic', () => {
  it('hands a fetched batch over in runs and commits it once, past its last message', async () => {
    const t = setup(async (messages) => messages.length);
    await t.eachBatch([10, 11, 12, 13, 14]);
    expect(t.runs).toEqual([
      [10, 11, 12],
      [13, 14],
    ]);
    expect(t.commits).toEqual([[{ partition: PARTITION, offset: '15' }]]);
    expect(t.resolved).toEqual(['12', '14']);
    expect(t.beats()).toBe(2); // a heartbeat after each run
  });

  it('commits only the messages handled, up to the first that was not; the rest are not handed on', async () => {
    const t = setup(async () => 2);
    await t.eachBatch([10, 11, 12, 13, 14]);
    expect(t.runs).toEqual([[10, 11, 12]]); // the batch ends at the first message not handled
    expect(t.commits).toEqual([[{ partition: PARTITION, offset: '12' }]]);
    expect(t.resolved).toEqual(['11']);
  });

  it('commits nothing of a run whose handle rejects', async () => {
    const t = setup(() => Promise.reject(new Error('the shard is not here')));
    await t.eachBatch([10, 11]);
    expect(t.runs).toEqual([[10, 11]]);
    expect(t.commits).toEqual([]);
    expect(t.resolved).toEqual([]);
  });

  it('a revoke between two runs: the first is committed, the rest is left for the next owner', async () => {
    let t: ReturnType<typeof setup> | undefined = undefined;
    t = setup(async (messages) => {
      t!.owned.delete(PARTITION); // the partition is taken away while the first run is handled
      return messages.length;
    });
    await t.eachBatch([10, 11, 12, 13, 14]);
    expect(t.runs).toEqual([[10, 11, 12]]);
    expect(t.commits).toEqual([[{ partition: PARTITION, offset: '13' }]]);
  });

  it('never commits past what handle says, even if it says more than it was given', async () => {
    const t = setup(async () => 99);
    await t.eachBatch([10, 11]);
    expect(t.commits).toEqual([[{ partition: PARTITION, offset: '12' }]]);
  });
});
