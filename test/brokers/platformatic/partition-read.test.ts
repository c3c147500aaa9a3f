import { describe, expect, it } from 'vitest';
import type { RecordsBatch } from '@platformatic/kafka';
import { nodeRuns } from '../../../src/brokers/platformatic/platformatic.js';

const TRANSACTIONAL = 1 << 4;
const CONTROL = 1 << 5;

/** A batch of `values` at `offset` from `producer`, written in a transaction. */
const data = (offset: number, producer: number, ...values: string[]): RecordsBatch =>
  ({
    firstOffset: BigInt(offset),
    lastOffsetDelta: values.length - 1,
    attributes: TRANSACTIONAL,
    producerId: BigInt(producer),
    records: values.map((v, i) => ({ offsetDelta: i, key: null, value: Buffer.from(v) })),
  }) as unknown as RecordsBatch;

/** `producer`'s marker at `offset`: its transaction ends committed or aborted. */
const marker = (offset: number, producer: number, ends: 'commit' | 'abort'): RecordsBatch => {
  const key = Buffer.alloc(4);
  key.writeInt16BE(ends === 'abort' ? 0 : 1, 2);
  return {
    firstOffset: BigInt(offset),
    lastOffsetDelta: 0,
    attributes: TRANSACTIONAL | CONTROL,
    producerId: BigInt(producer),
    records: [{ offsetDelta: 0, key, value: null }],
  } as unknown as RecordsBatch;
};

const aborted = (producer: number, firstOffset: number) => ({
  producerId: BigInt(producer),
  firstOffset: BigInt(firstOffset),
});

describe.skipIf(!nodeRuns(process.versions.node))('a partition read on @platformatic/kafka', () => {
  const load = () => import('../../../src/brokers/platformatic/partition-read.js');
  const values = async (batches: RecordsBatch[], list: ReturnType<typeof aborted>[], from = 0) => {
    const { committedOf } = await load();
    const seen: string[] = [];
    const next = committedOf(batches, list, BigInt(from), (m) => {
      seen.push(`${m.offset}:${String(m.value)}`);
      return false;
    });
    return { seen, next };
  };

  it('skips an aborted transaction whose marker the answer ends before, and goes on past what it holds', async () => {
    // The fetch stopped at its byte limit after the aborted batch: its marker (offset 2) comes in the next answer.
    const { seen, next } = await values([data(0, 7, 'a', 'b')], [aborted(7, 0)]);
    expect(seen).toEqual([]);
    expect(next).toBe(2n);
  });

  it('keeps a committed transaction of the same producer between two aborted ones, whichever batches the client left', async () => {
    const all = [
      data(0, 7, 'x'),
      marker(1, 7, 'abort'),
      data(2, 7, 'kept'),
      marker(3, 7, 'commit'),
      // The client dropped offset 4, the second aborted transaction's batch, and kept its marker.
      marker(5, 7, 'abort'),
      data(6, 7, 'also kept'),
      marker(7, 7, 'commit'),
    ];
    const { seen, next } = await values(all, [aborted(7, 0), aborted(7, 4)]);
    expect(seen).toEqual(['2:kept', '6:also kept']);
    expect(next).toBe(8n);
  });

  it('keeps another producer’s batches interleaved with an aborted transaction, and records before the offset asked are left', async () => {
    const all = [
      data(0, 1, 'old', 'new'),
      data(2, 7, 'zombie'),
      data(3, 1, 'mine'),
      marker(4, 7, 'abort'),
      marker(5, 1, 'commit'),
    ];
    const { seen, next } = await values(all, [aborted(7, 2)], 1);
    expect(seen).toEqual(['1:new', '3:mine']);
    expect(next).toBe(6n);
  });

  it('stops at the record the reader says is the last it needs', async () => {
    const { committedOf } = await load();
    const seen: string[] = [];
    const done = committedOf([data(0, 1, 'a', 'b', 'c')], [], 0n, (m) => {
      seen.push(String(m.value));
      return String(m.value) === 'b';
    });
    expect([done, seen]).toEqual(['done', ['a', 'b']]);
  });
});
