import { describe, expect, it } from 'vitest';
import {
  MemoryBroker,
  PARTITION_KEY_HEADER,
  SluiceError,
  type ConsumeRequest,
  type Consumer,
} from '../../../src/index.js';

const request = (topic: string, group: string, revoked: number[][] = []): ConsumeRequest => ({
  topic,
  group,
  onReadable: () => {},
  onRevoke: async (partitions) => void revoked.push([...partitions]),
});

describe('MemoryBroker', () => {
  it('puts the key in header partition-key, keeps one key in one partition, numbers offsets from 0', async () => {
    const broker = new MemoryBroker({ partitions: 4 });
    for (let i = 0; i < 20; i++) await broker.publish('t', { i }, { key: `k${i % 2}` });
    const messages = broker.messages('t');
    expect(messages).toHaveLength(20);
    for (const m of messages) expect(m.headers[PARTITION_KEY_HEADER]).toBe(m.key);
    const partitionsOf = (k: string) => new Set(messages.filter((m) => m.key === k).map((m) => m.partition));
    expect(partitionsOf('k0').size).toBe(1);
    expect(partitionsOf('k1').size).toBe(1);
    for (const p of [0, 1, 2, 3]) {
      const offsets = messages.filter((m) => m.partition === p).map((m) => m.offset);
      expect(offsets).toEqual([...offsets.keys()]);
    }
    expect(
      broker
        .values('t')
        .map((v) => (v as { i: number }).i)
        .sort((a, b) => a - b),
    ).toEqual([...Array(20).keys()]);
  });

  it('refuses a publish to a partition the topic does not have, with CONFIG_INVALID', async () => {
    const broker = new MemoryBroker({ partitions: 2 });
    await expect(broker.publish('t', 'x', { partition: 2 })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/"t".*partition.*got 2/),
    });
    expect(broker.messages('t')).toEqual([]);
  });

  it('reads the key from a partition-key header too, and rotates keyless messages', async () => {
    const broker = new MemoryBroker({ partitions: 3 });
    const m = broker.publishNow('t', 'x', { headers: { [PARTITION_KEY_HEADER]: 'abc' } });
    expect(m.key).toBe('abc');
    const keyless = [0, 1, 2].map(() => broker.publishNow('u', 'x').partition);
    expect(keyless).toEqual([0, 1, 2]);
  });

  it('takes only what is asked, resumes from the committed offset, and redelivers what was not committed', async () => {
    const broker = new MemoryBroker();
    for (let i = 0; i < 10; i++) await broker.publish('t', { i });
    const first = await broker.consume(request('t', 'g'));
    expect(first.take(3).map((m) => m.offset)).toEqual([0, 1, 2]);
    expect(first.backlog()).toBe(7);
    first.commit(0, 2); // offsets 0 and 1 done, 2 not
    await first.close();
    expect(broker.committed('g', 't')).toEqual([2]);
    const second = await broker.consume(request('t', 'g'));
    expect(second.take(100).map((m) => m.offset)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    expect(broker.readCount('g', 't')).toBe(11);
  });

  it('takes of each partition at most what perPartition allows it, in offset order', async () => {
    const broker = new MemoryBroker({ topics: { t: 3 } });
    for (let i = 0; i < 30; i++) await broker.publish('t', { i }, { partition: i % 3 });
    const c = await broker.consume(request('t', 'g'));
    const room = [2, 0, 5];
    const taken = c.take(100, (p) => room[p]!);
    const of = (p: number) => taken.filter((m) => m.partition === p).map((m) => m.offset);
    expect([of(0), of(1), of(2)]).toEqual([[0, 1], [], [0, 1, 2, 3, 4]]);
    expect(c.take(4, () => -1)).toEqual([]); // no room
    const rest = c.take(100);
    expect(rest).toHaveLength(30 - 7);
    expect(rest.filter((m) => m.partition === 0)[0]!.offset).toBe(2);
  });

  it('never hands out messages of a paused partition', async () => {
    const broker = new MemoryBroker();
    await broker.publish('t', 1);
    const c = await broker.consume(request('t', 'g'));
    c.pause(0);
    expect(c.take(10)).toEqual([]);
    c.resume(0);
    expect(c.take(10)).toHaveLength(1);
  });

  it('rebalances eagerly: members share partitions, revoke before reassign', async () => {
    const broker = new MemoryBroker({ topics: { t: 4 } });
    const revokedA: number[][] = [];
    const a: Consumer = await broker.consume(request('t', 'g', revokedA));
    expect(a.assigned()).toEqual([0, 1, 2, 3]);
    const b = await broker.consume(request('t', 'g'));
    expect(revokedA).toEqual([[0, 1, 2, 3]]);
    expect([...a.assigned(), ...b.assigned()].sort()).toEqual([0, 1, 2, 3]);
    expect(a.assigned().length).toBe(2);
    await b.close();
    expect(a.assigned()).toEqual([0, 1, 2, 3]);
    const other = await broker.consume(request('t', 'other'));
    expect(other.assigned()).toEqual([0, 1, 2, 3]); // another group gets everything
  });

  it('ignores commits for partitions it does not own and never moves a commit backwards', async () => {
    const broker = new MemoryBroker({ topics: { t: 2 } });
    const a = await broker.consume(request('t', 'g'));
    const b = await broker.consume(request('t', 'g'));
    const [pa] = a.assigned();
    const [pb] = b.assigned();
    a.commit(pb!, 5);
    a.commit(pa!, 3);
    a.commit(pa!, 1);
    const committed = broker.committed('g', 't');
    expect(committed[pb!]).toBe(0);
    expect(committed[pa!]).toBe(3);
  });

  it('rejects bad partition counts with SluiceError CONFIG_INVALID, naming the field and the value', async () => {
    const refused = (fn: () => unknown): SluiceError => {
      try {
        fn();
      } catch (error) {
        expect(error).toBeInstanceOf(SluiceError);
        expect((error as SluiceError).code).toBe('CONFIG_INVALID');
        return error as SluiceError;
      }
      throw new Error('expected a SluiceError');
    };
    expect(refused(() => new MemoryBroker({ partitions: 0 })).message).toBe(
      'MemoryBroker: partitions must be a positive integer, got 0',
    );
    expect(refused(() => new MemoryBroker({ partitions: Number.NaN })).message).toMatch(
      /partitions must be a positive integer, got NaN/,
    );
    expect(refused(() => new MemoryBroker({ topics: { orders: 0 } })).message).toBe(
      'MemoryBroker: topics["orders"] must be a positive integer, got 0',
    );
    expect(refused(() => new MemoryBroker({ topics: { orders: 2, refunds: 1.5 } })).message).toMatch(
      /topics\["refunds"\] must be a positive integer, got 1\.5/,
    );
    expect(refused(() => new MemoryBroker({ topics: { orders: '3' as never } })).message).toMatch(
      /topics\["orders"\] must be a positive integer, got "3"/,
    );
    expect(refused(() => new MemoryBroker({ topics: null as never })).message).toMatch(
      /topics must be an object .*got null/,
    );
    expect(refused(() => new MemoryBroker({ now: 5 as never })).message).toMatch(/now must be a function, got 5/);
    const rejection = await new MemoryBroker().createTopic('t', 1.5).catch((error: unknown) => error);
    expect(rejection).toBeInstanceOf(SluiceError);
    expect((rejection as SluiceError).code).toBe('CONFIG_INVALID');
    expect((rejection as SluiceError).message).toBe(
      'MemoryBroker.createTopic("t"): partitions must be a positive integer, got 1.5',
    );
  });

  it('gives the topics named in topics their own partition count, fixed at construction', () => {
    const topics: Record<string, number> = { orders: 3 };
    const broker = new MemoryBroker({ partitions: 2, topics });
    topics.orders = 7;
    expect(broker.endOffsets('orders')).toHaveLength(3);
    expect(broker.endOffsets('other')).toHaveLength(2);
  });
});

describe('MemoryBroker values', () => {
  it('copies published bytes, so changing them afterwards changes nothing stored', async () => {
    const broker = new MemoryBroker();
    const bytes = new Uint8Array([1, 2, 3]);
    await broker.publish('t', bytes);
    bytes[0] = 9;
    expect([...broker.messages('t')[0]!.value]).toEqual([1, 2, 3]);
    expect(Buffer.isBuffer(broker.messages('t')[0]!.value)).toBe(true);
  });
});
