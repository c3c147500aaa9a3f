/**
 * KafkaBroker's publishes gathered by partition (PublishBatches), without a broker: publishes made in one
 * turn to one partition (pinned, or by one key) go in one send, in order; a batch refused for good is sent
 * again message by message, so that only the refused message's publish is refused.
 */
import type { Message } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { BATCH_BYTES, PublishBatches, keyPartition } from '../../../../src/brokers/kafka/publish/publish-batches.js';

const TOO_LARGE = Object.assign(new Error('too large'), { type: 'MESSAGE_TOO_LARGE' });

function setup(refuse: (messages: Message[]) => Error | undefined = () => undefined, partitions?: number) {
  const sends: { topic: string; values: string[]; partitions: (number | undefined)[] }[] = [];
  const batches = new PublishBatches(
    async (topic, messages) => {
      sends.push({ topic, values: messages.map((m) => String(m.value)), partitions: messages.map((m) => m.partition) });
      const refused = refuse(messages);
      if (refused) throw refused;
      return [{ topicName: topic, partition: 0, errorCode: 0 }];
    },
    () => partitions,
  );
  return { batches, sends };
}

const message = (value: string, to: { key?: string; partition?: number }): Message => ({
  key: to.key ?? null,
  value: Buffer.from(value),
  partition: to.partition,
});

describe('kafka: publishes gathered by partition', () => {
  it('sends the publishes of one turn to one partition or key together, in order, and others apart', async () => {
    const { batches, sends } = setup();
    await Promise.all([
      batches.publish('t', message('p1-a', { partition: 1 })),
      batches.publish('t', message('k-a', { key: 'k' })),
      batches.publish('t', message('p1-b', { partition: 1, key: 'other' })),
      batches.publish('u', message('u-p1', { partition: 1 })),
      batches.publish('t', message('k-b', { key: 'k' })),
    ]);
    expect(sends.map(({ topic, values }) => ({ topic, values }))).toEqual([
      { topic: 't', values: ['p1-a', 'p1-b'] },
      { topic: 't', values: ['k-a', 'k-b'] },
      { topic: 'u', values: ['u-p1'] },
    ]);
  });

  it('sends a message with neither key nor partition on its own, at once', async () => {
    const { batches, sends } = setup();
    await Promise.all([batches.publish('t', message('a', {})), batches.publish('t', message('b', {}))]);
    expect(sends.map((s) => s.values)).toEqual([['a'], ['b']]);
  });

  it('where the partition count is known, keys of one partition go together, in order, sent keyed', async () => {
    const { batches, sends } = setup(undefined, 3);
    const keys = Array.from({ length: 60 }, (_, i) => `key-${i}`);
    await Promise.all(keys.map((key) => batches.publish('t', message(key, { key }))));
    const byPartition = [0, 1, 2].map((p) => keys.filter((k) => keyPartition(k, 3) === p));
    const sent = sends.map((s) => s.values).sort((a, b) => keyPartition(a[0]!, 3) - keyPartition(b[0]!, 3));
    expect(sent).toEqual(byPartition.filter((ks) => ks.length > 0));
    expect(sends.flatMap((s) => s.partitions).every((p) => p === undefined)).toBe(true); // kafkajs places them
  });

  it('where the count is known, a turn’s unkeyed messages stick to one partition, the next turn to the next', async () => {
    const { batches, sends } = setup(undefined, 3);
    for (let turn = 0; turn < 4; turn++)
      await Promise.all(['x', 'y'].map((v) => batches.publish('t', message(`${v}${turn}`, {}))));
    expect(sends.map((s) => [s.values, s.partitions])).toEqual([
      [
        ['x0', 'y0'],
        [0, 0],
      ],
      [
        ['x1', 'y1'],
        [1, 1],
      ],
      [
        ['x2', 'y2'],
        [2, 2],
      ],
      [
        ['x3', 'y3'],
        [0, 0],
      ],
    ]);
  });

  it('a later turn makes a batch of its own', async () => {
    const { batches, sends } = setup();
    await batches.publish('t', message('a', { key: 'k' }));
    await batches.publish('t', message('b', { key: 'k' }));
    expect(sends.map((s) => s.values)).toEqual([['a'], ['b']]);
  });

  it('a batch refused for good is sent again message by message: only the refused message’s publish rejects', async () => {
    const { batches, sends } = setup((messages) =>
      messages.some((m) => String(m.value) === 'huge') ? TOO_LARGE : undefined,
    );
    const results = await Promise.allSettled(
      ['a', 'huge', 'b'].map((v) => batches.publish('t', message(v, { partition: 0 }))),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBe(TOO_LARGE);
    expect(sends.map((s) => s.values)).toEqual([['a', 'huge', 'b'], ['a'], ['huge'], ['b']]);
  });

  it('any other failure is every publish’s of the batch, sent once', async () => {
    const lost = new Error('connection lost');
    const { batches, sends } = setup(() => lost);
    const results = await Promise.allSettled(['a', 'b'].map((v) => batches.publish('t', message(v, { key: 'k' }))));
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as unknown) : r.status))).toEqual([lost, lost]);
    expect(sends).toHaveLength(1);
  });

  it('cuts a batch into pieces of at most BATCH_BYTES', async () => {
    const { batches, sends } = setup();
    const third = 'x'.repeat(Math.floor(BATCH_BYTES / 3));
    await Promise.all(Array.from({ length: 4 }, () => batches.publish('t', message(third, { partition: 0 }))));
    expect(sends.map((s) => s.values.length)).toEqual([3, 1]);
  });
  it('one send in flight per partition: publishes made meanwhile, over several turns, go next, together and in order', async () => {
    const answers: (() => void)[] = [];
    const sends: string[][] = [];
    const batches = new PublishBatches((topic, messages) => {
      sends.push(messages.map((m) => String(m.value)));
      return new Promise((resolve) => answers.push(() => resolve([{ topicName: topic, partition: 0, errorCode: 0 }])));
    });
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const published = [batches.publish('t', message('a', { partition: 0 }))];
    await turn();
    expect(sends).toEqual([['a']]);
    published.push(batches.publish('t', message('b', { partition: 0 })));
    await turn();
    published.push(
      batches.publish('t', message('c', { key: 'k' })),
      batches.publish('t', message('d', { partition: 0 })),
    );
    await turn();
    expect(sends).toEqual([['a'], ['c']]); // partition 0's next batch waits; another partition's does not
    answers.shift()!();
    await turn();
    expect(sends).toEqual([['a'], ['c'], ['b', 'd']]);
    answers.splice(0).forEach((answer) => answer());
    await Promise.all(published);
    expect(sends).toHaveLength(3);
  });

  it('a batch in pieces sends them one after the other', async () => {
    const answers: (() => void)[] = [];
    const sends: number[] = [];
    const batches = new PublishBatches((topic, messages) => {
      sends.push(messages.length);
      return new Promise((resolve) => answers.push(() => resolve([{ topicName: topic, partition: 0, errorCode: 0 }])));
    });
    const third = 'x'.repeat(Math.floor(BATCH_BYTES / 3));
    const published = Promise.all(
      Array.from({ length: 4 }, () => batches.publish('t', message(third, { partition: 0 }))),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(sends).toEqual([3]);
    answers.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(sends).toEqual([3, 1]);
    answers.shift()!();
    await published;
  });
});
