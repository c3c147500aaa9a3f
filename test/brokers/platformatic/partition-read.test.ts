import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RecordsBatch } from '@platformatic/kafka';
import { nodeRuns } from '../../../src/brokers/platformatic/platformatic.js';

const TRANSACTIONAL = 1 << 4;
const CONTROL = 1 << 5;

/** A batch of `values` at `offset` from `producer`, written in a transaction (or not). */
const data = (offset: number, producer: number, values: string[], transactional = true): RecordsBatch =>
  ({
    firstOffset: BigInt(offset),
    lastOffsetDelta: values.length - 1,
    attributes: transactional ? TRANSACTIONAL : 0,
    producerId: BigInt(producer),
    firstTimestamp: 0n,
    records: values.map((v, i) => ({ offsetDelta: i, timestampDelta: 0n, key: null, value: Buffer.from(v) })),
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
    firstTimestamp: 0n,
    records: [{ offsetDelta: 0, timestampDelta: 0n, key, value: null }],
  } as unknown as RecordsBatch;
};

const aborted = (producer: number, firstOffset: number) => ({
  producerId: BigInt(producer),
  firstOffset: BigInt(firstOffset),
});

/** One step of a partition's writers: a producer writes `n` records, or ends its transaction, or writes outside any. */
type Step =
  | { readonly kind: 'write'; readonly producer: number; readonly n: number }
  | { readonly kind: 'end'; readonly producer: number; readonly commit: boolean }
  | { readonly kind: 'plain'; readonly n: number };

const steps = fc.array(
  fc.oneof(
    fc.record({
      kind: fc.constant('write' as const),
      producer: fc.integer({ min: 1, max: 3 }),
      n: fc.integer({ min: 1, max: 3 }),
    }),
    fc.record({ kind: fc.constant('end' as const), producer: fc.integer({ min: 1, max: 3 }), commit: fc.boolean() }),
    fc.record({ kind: fc.constant('plain' as const), n: fc.integer({ min: 1, max: 2 }) }),
  ),
  { maxLength: 40 },
);

/**
 * The partition `steps` write (every transaction left open ended at last, committed or aborted as `commitLast`),
 * and what the broker knows of it: each batch, each aborted transaction that wrote data (producer, first
 * offset, its marker's offset), and the values a `read_committed` reader must see, by offset.
 */
function partitionOf(all: readonly Step[], commitLast: boolean) {
  const batches: RecordsBatch[] = [];
  const abortedTxns: { producer: number; first: number; last: number }[] = [];
  const values = new Map<number, string>();
  const open = new Map<number, { first: number | undefined; offsets: number[] }>();
  let offset = 0;
  const end = (producer: number, commit: boolean): void => {
    const txn = open.get(producer)!;
    open.delete(producer);
    if (!commit && txn.first !== undefined) abortedTxns.push({ producer, first: txn.first, last: offset });
    if (commit) for (const o of txn.offsets) values.set(o, `${producer}@${o}`);
    batches.push(marker(offset++, producer, commit ? 'commit' : 'abort'));
  };
  for (const step of all) {
    if (step.kind === 'plain') {
      const vs = Array.from({ length: step.n }, (_, i) => `plain@${offset + i}`);
      for (let i = 0; i < step.n; i++) values.set(offset + i, vs[i]!);
      batches.push(data(offset, 0, vs, false));
      offset += step.n;
    } else if (step.kind === 'write') {
      const txn = open.get(step.producer) ?? { first: undefined, offsets: [] };
      open.set(step.producer, txn);
      txn.first ??= offset;
      const vs = Array.from({ length: step.n }, (_, i) => `${step.producer}@${offset + i}`);
      for (let i = 0; i < step.n; i++) txn.offsets.push(offset + i);
      batches.push(data(offset, step.producer, vs));
      offset += step.n;
    } else if (open.has(step.producer)) end(step.producer, step.commit);
    // An empty transaction aborted (a fenced writer's): a marker, and no entry among the aborted.
    else if (!step.commit) {
      open.set(step.producer, { first: undefined, offsets: [] });
      end(step.producer, false);
    }
  }
  for (const producer of [...open.keys()]) end(producer, commitLast);
  return { batches, abortedTxns, values, size: offset };
}

describe.skipIf(!nodeRuns(process.versions.node))('reading committed transactions on @platformatic/kafka', () => {
  const load = async () => ({
    ...(await import('../../../src/brokers/platformatic/partition-read.js')),
    ...(await import('../../../src/brokers/platformatic/committed-fetch.js')),
  });
  /** The values a read of one answer (`batches`, with the broker's `list` of aborted transactions) visits from `from`. */
  const read = async (batches: RecordsBatch[], list: ReturnType<typeof aborted>[], from = 0) => {
    const { committedOf, dropAborted } = await load();
    const seen: string[] = [];
    const next = committedOf(dropAborted(batches, list), BigInt(from), (m) => {
      seen.push(`${m.offset}:${String(m.value)}`);
      return false;
    });
    return { seen, next };
  };

  it('skips an aborted transaction whose marker the answer ends before, and goes on past what it holds', async () => {
    // The fetch stopped at its byte limit after the aborted batch: its marker (offset 2) comes in the next answer.
    const { seen, next } = await read([data(0, 7, ['a', 'b'])], [aborted(7, 0)]);
    expect(seen).toEqual([]);
    expect(next).toBe(2n);
  });

  it('keeps the committed transactions of a producer between and after its aborted ones in one answer', async () => {
    // The shape a shard's changelog had when a restore lost acknowledged records: the writer fenced once, then
    // committing many transactions, then an empty transaction of a later holder aborted.
    const all = [
      data(0, 7, ['before']),
      marker(1, 7, 'commit'),
      data(2, 7, ['x']),
      marker(3, 7, 'abort'),
      data(4, 7, ['kept']),
      marker(5, 7, 'commit'),
      data(6, 7, ['y', 'z']),
      marker(8, 7, 'abort'),
      data(9, 7, ['also kept']),
      marker(10, 7, 'commit'),
      marker(11, 7, 'abort'),
      data(12, 7, ['after']),
      marker(13, 7, 'commit'),
    ];
    const { seen, next } = await read(all, [aborted(7, 2), aborted(7, 6)]);
    expect(seen).toEqual(['0:before', '4:kept', '9:also kept', '12:after']);
    expect(next).toBe(14n);
  });

  it('keeps another producer’s batches interleaved with an aborted transaction, and records before the offset asked are left', async () => {
    const all = [
      data(0, 1, ['old', 'new']),
      data(2, 7, ['zombie']),
      data(3, 1, ['mine']),
      marker(4, 7, 'abort'),
      marker(5, 1, 'commit'),
    ];
    const { seen, next } = await read(all, [aborted(7, 2)], 1);
    expect(seen).toEqual(['1:new', '3:mine']);
    expect(next).toBe(6n);
  });

  it('reads every committed record and no aborted one, from any offset, whatever answer the broker cuts', async () => {
    const { committedOf, dropAborted } = await load();
    fc.assert(
      fc.property(steps, fc.boolean(), fc.nat(), fc.nat(), (all, commitLast, a, b) => {
        const p = partitionOf(all, commitLast);
        if (p.size === 0) return;
        // An answer from the batch holding `from` up to the batch holding `cut`, as the broker gives one.
        const from = a % p.size;
        const cut = from + (b % (p.size - from));
        const answer = p.batches.filter((x) => {
          const last = Number(x.firstOffset) + x.lastOffsetDelta;
          return last >= from && Number(x.firstOffset) <= cut;
        });
        const upTo = Number(answer.at(-1)!.firstOffset) + answer.at(-1)!.lastOffsetDelta + 1;
        // The broker lists the aborted transactions whose marker is at `from` or later and which began before the end.
        const list = p.abortedTxns
          .filter((t) => t.last >= from && t.first < upTo)
          .map((t) => aborted(t.producer, t.first));
        const seen: string[] = [];
        const next = committedOf(dropAborted(answer, list), BigInt(from), (m) => {
          seen.push(String(m.value));
          return false;
        });
        const wanted = [...p.values]
          .filter(([o]) => o >= from && o < upTo)
          .sort(([x], [y]) => x - y)
          .map(([, v]) => v);
        expect(seen).toEqual(wanted);
        expect(next).toBe(BigInt(upTo));
      }),
      { numRuns: 500 },
    );
  });

  it('stops at the record the reader says is the last it needs', async () => {
    const { committedOf } = await load();
    const seen: string[] = [];
    const done = committedOf([data(0, 1, ['a', 'b', 'c'])], 0n, (m) => {
      seen.push(String(m.value));
      return String(m.value) === 'b';
    });
    expect([done, seen]).toEqual(['done', ['a', 'b']]);
  });
});
