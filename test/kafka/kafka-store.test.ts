/**
 * The Kafka store beyond the shard log contract (test/kafka/shard-log.test.ts): fencing, a snapshot cut off
 * half way, a restore of 100,000 records, a SIGKILL crash loop, its settings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { App, SluiceError, silentLogger, subscriber, type ShardLog, type Store } from '../../src/index.js';
import type { KafkaShardLog } from '../../src/brokers/kafka/store/kafka-shard-log.js';
import { snapshotMessages } from '../../src/brokers/kafka/store/kafka-snapshots.js';
import { killAfterAcks } from '../crash-child.js';
import { seeded } from '../helpers.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';
import {
  TEST_MAX_MESSAGE_BYTES,
  storeClients,
  storeOn,
  testKafkaStore as testStore,
  uniquePrefix,
} from './store-fixture.js';
import { platformaticRuns } from './clients.js';
import { crashRounds, soakTimeout } from '../soak.js';

const ITERATIONS = crashRounds(1 / 10);

const text = (r: Uint8Array) => Buffer.from(r).toString();
async function contents(log: ShardLog, from = 1): Promise<[number, string][]> {
  const out: [number, string][] = [];
  await log.replay(from, (lsn, r) => out.push([lsn, text(r)]));
  return out;
}

describe.skipIf(!kafkaBrokers).each(storeClients)('the Kafka store on %s', { timeout: 120_000 }, (client) => {
  const kafkaStore = storeOn(client);
  const what = client === 'kafkajs' ? 'kafkaStore' : 'platformaticKafkaStore';
  const testKafkaStore: typeof testStore = (prefix, options) => testStore(prefix, options, client);
  const stores: Store[] = [];
  const opened = async (store: Store): Promise<Store> => {
    stores.push(store);
    await store.open();
    return store;
  };
  afterEach(async () => {
    await Promise.allSettled(stores.splice(0).map((s) => s.close()));
    await closeAll();
  });

  it('opens on three instances started at once on a new prefix: each waits for the topics another is creating', async () => {
    for (let round = 0; round < 6; round++) {
      const prefix = uniquePrefix(`together-${round}`);
      const three = [0, 1, 2].map(() =>
        testKafkaStore(prefix, { shards: 6, ownership: 'partition', logger: silentLogger }),
      );
      stores.push(...three);
      const opened = await Promise.allSettled(three.map((s) => s.open()));
      expect(opened.filter((r) => r.status === 'rejected')).toEqual([]);
    }
  });

  it('is fenced by a second owner of the shard: its next append rejects with STORE_FENCED, the second has every record it resolved', async () => {
    const prefix = uniquePrefix('fence');
    const first = (await opened(testKafkaStore(prefix))).log(0);
    const resolved = await Promise.all(['a', 'b', 'c'].map((r) => first.append(Buffer.from(r))));
    expect(resolved).toEqual([1, 2, 3]);
    const second = (await opened(testKafkaStore(prefix))).log(0);
    const late = first.append(Buffer.from('zombie'));
    await expect(late).rejects.toMatchObject({ code: 'STORE_FENCED' });
    expect(() => first.append(Buffer.from('later'))).toThrow(expect.objectContaining({ code: 'STORE_FENCED' }));
    expect(first.durableLsn()).toBe(3);
    expect(await contents(second)).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    expect(await second.append(Buffer.from('d'))).toBe(4); // the zombie's record took no LSN here
    const third = (await opened(testKafkaStore(prefix))).log(0);
    expect(await contents(third)).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
      [4, 'd'],
    ]);
  });

  it('reads the previous snapshot and the whole tail after a crash half way through a snapshot', async () => {
    const prefix = uniquePrefix('half-snapshot');
    const store = await opened(testKafkaStore(prefix));
    const log = store.log(0) as KafkaShardLog;
    for (let i = 1; i <= 30; i += 10)
      await Promise.all(Array.from({ length: 10 }, (_, j) => log.append(Buffer.from(`r${i + j}`))));
    const state10 = Buffer.alloc(3 * TEST_MAX_MESSAGE_BYTES, 'a'); // several chunks
    await log.writeSnapshot(10, state10);
    // The snapshot of LSN 20: every chunk written and committed, the head never (the process died).
    const { chunks } = snapshotMessages(20, Buffer.alloc(3 * TEST_MAX_MESSAGE_BYTES, 'b'), 60_000);
    await (log as unknown as { writeSnapshotMessages(m: typeof chunks): Promise<void> }).writeSnapshotMessages(chunks);
    const again = (await opened(testKafkaStore(prefix))).log(0); // the dead process is abandoned, never closed
    const snap = await again.readSnapshot();
    expect(snap!.lsn).toBe(10);
    expect(Buffer.from(snap!.state).equals(state10)).toBe(true);
    expect(await contents(again, 11)).toEqual(Array.from({ length: 20 }, (_, i) => [11 + i, `r${11 + i}`]));
    // The records the snapshot of LSN 10 covers were deleted from the changelog.
    const admin = testKafka().kafka.admin();
    await admin.connect();
    const [offsets] = await admin.fetchTopicOffsets(`${prefix}.changelog`);
    await admin.disconnect();
    expect(Number(offsets!.low)).toBeGreaterThan(0);
    // A later snapshot replaces it, the stale chunks tombstoned; a reopen reads it.
    await again.writeSnapshot(30, Buffer.from('state@30'));
    const last = (await opened(testKafkaStore(prefix))).log(0);
    const latest = await last.readSnapshot();
    expect([latest!.lsn, text(latest!.state)]).toEqual([30, 'state@30']);
    expect(await contents(last, 31)).toEqual([]);
    expect(last.durableLsn()).toBe(30);
  });

  it('restores a shard of 100,000 records and a snapshot of 100,000 keys', async () => {
    const prefix = uniquePrefix('restore');
    const log = (await opened(testKafkaStore(prefix, { maxMessageBytes: 1_000_000 }))).log(0);
    const n = 100_000;
    for (let i = 0; i < n; i += 2_000)
      await Promise.all(Array.from({ length: 2_000 }, (_, j) => log.append(Buffer.from(`event-${i + j + 1}`))));
    const keys = Array.from({ length: 100_000 }, (_, k) => [`key-${k}`, { n: k }]);
    const state = Buffer.from(JSON.stringify({ lsn: n / 2, keys }));
    await log.writeSnapshot(n / 2, state);
    for (let i = 0; i < 1_000; i += 100)
      await Promise.all(Array.from({ length: 100 }, (_, j) => log.append(Buffer.from(`after-${i + j}`))));
    const again = (await opened(testKafkaStore(prefix, { maxMessageBytes: 1_000_000 }))).log(0);
    const snap = await again.readSnapshot();
    expect(snap!.lsn).toBe(n / 2);
    expect(Buffer.from(snap!.state).equals(state)).toBe(true);
    let expected = n / 2 + 1;
    await again.replay(n / 2 + 1, (lsn, r) => {
      expect(lsn).toBe(expected);
      expect(text(r)).toBe(lsn <= n ? `event-${lsn}` : `after-${lsn - n - 1}`);
      expected++;
    });
    expect(expected - 1).toBe(n + 1_000);
    expect(again.durableLsn()).toBe(n + 1_000);
  });

  it(
    `keeps every acknowledged record across ${ITERATIONS} SIGKILLs of an appending process`,
    async () => {
      const prefix = uniquePrefix('crash');
      const random = seeded(Number(process.env.SLUICE_CRASH_SEED ?? 17));
      const everAcked = new Map<number, string>();
      const appended = new Set<string>();
      for (let i = 0; i < ITERATIONS; i++) {
        const acked = await killAfterAcks(
          'test/fixtures/kafka-store-appender.mjs',
          [kafkaBrokers!, prefix, `r${i}`, client],
          1 + Math.floor(random() * 400),
        );
        for (const [lsn, payload] of acked) {
          everAcked.set(Number(lsn), payload!);
          appended.add(payload!);
        }
        const store = await opened(testKafkaStore(prefix, { maxMessageBytes: 65_536 }));
        const log = store.log(0);
        const snap = await log.readSnapshot();
        const from = (snap?.lsn ?? 0) + 1;
        if (snap) {
          const [lsn, ...parts] = text(snap.state).split(':'); // <lsn>:<payload, itself r<i>:<worker>:<seq>>:<padding>
          const payload = parts.slice(0, 3).join(':');
          expect(Number(lsn)).toBe(snap.lsn);
          const ack = everAcked.get(snap.lsn);
          if (ack !== undefined) expect(payload).toBe(ack);
        }
        let expected = from;
        await log.replay(from, (lsn, record) => {
          expect(lsn).toBe(expected++); // in order, no gaps
          const payload = text(record);
          expect(payload).toMatch(/^r\d+:\d+:\d+$/); // nothing never appended
          const ack = everAcked.get(lsn);
          if (ack !== undefined) expect(payload).toBe(ack);
          else everAcked.set(lsn, payload); // committed but not heard of before the kill: it stays, at its LSN
        });
        expect(log.durableLsn()).toBe(expected - 1);
        for (const lsn of everAcked.keys()) expect(lsn, `acknowledged LSN ${lsn} lost`).toBeLessThan(expected);
        stores.splice(stores.indexOf(store), 1);
        await store.close();
      }
    },
    soakTimeout(600_000),
  );

  it('opens again after a close, the same object (an app stopped and started again)', async () => {
    const store = await opened(testKafkaStore(uniquePrefix('reopen')));
    expect(await store.log(0).append(Buffer.from('a'))).toBe(1);
    await store.close();
    await store.open();
    expect(await contents(store.log(0))).toEqual([[1, 'a']]);
    expect(await store.log(0).append(Buffer.from('b'))).toBe(2);
  });

  it('tells the cluster it keeps its topics on, once open: the broker’s, when both name the same brokers', async () => {
    const store = testKafkaStore(uniquePrefix('cluster'));
    await expect(store.clusterId!()).rejects.toMatchObject({ code: 'APP_STATE' });
    await opened(store);
    const id = await store.clusterId!();
    expect(id).toMatch(/^\S+$/);
    expect(await testKafka().clusterId()).toBe(id);
  });

  it('checks its settings, naming the field and the value', () => {
    const base = { brokers: ['127.0.0.1:1'], prefix: 'p' };
    const refused = (options: object, field: RegExp) =>
      expect(() => kafkaStore({ ...base, ...options })).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringMatching(field) }) as SluiceError,
      );
    refused({ brokers: [] }, new RegExp(`${what}: brokers must be .* got \\[\\]`));
    refused({ prefix: 'a b' }, /prefix must be .* got "a b"/);
    refused({ prefix: 12 }, /prefix must be .* got 12/);
    refused({ ownership: 'some' }, /ownership must be 'all' or 'partition', got "some"/);
    refused({ shards: 0 }, /shards must be a positive integer, got 0/);
    refused({ replicationFactor: 1.5 }, /replicationFactor must be a positive integer, got 1.5/);
    refused(
      { replicationFactor: 1, minInsyncReplicas: 2 },
      /minInsyncReplicas must be an integer from 1 to replicationFactor \(1\), got 2/,
    );
    refused({ maxMessageBytes: 1000 }, /maxMessageBytes must be an integer >= 65536, got 1000/);
    refused({ snapshotEvery: -1 }, /snapshotEvery must be a positive integer, got -1/);
  });

  it('without a prefix, is named after the app that opens it: <app>.<subscriber>.changelog and .snapshots', async () => {
    const name = uniquePrefix('named');
    const broker = testKafka();
    const topic = `${name}-in`;
    await broker.createTopic(topic, 1);
    const store = kafkaStore({ brokers: [kafkaBrokers!], shards: 1, replicationFactor: 1, logger: silentLogger });
    stores.push(store);
    const app = new App({ name, logger: silentLogger, store }).withBroker(broker, (b) =>
      b.include(
        subscriber(topic, () => {})
          .name('ev')
          .pace({ debounce: '1 s' })
          .build(),
      ),
    );
    await app.start();
    await app.stop();
    const admin = broker.kafka.admin();
    await admin.connect();
    const topics = await admin.listTopics().finally(() => admin.disconnect());
    expect(topics).toEqual(expect.arrayContaining([`${name}.ev.changelog`, `${name}.ev.snapshots`]));
    // Opened by hand, with no app to name it, and with names that are no topic's: refused, naming the way out.
    await expect(kafkaStore({ brokers: [kafkaBrokers!] }).open()).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/no prefix: give one/),
    });
    await expect(
      kafkaStore({ brokers: [kafkaBrokers!] }).open({ app: 'a b', subscribers: ['ev'] }),
    ).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/"a b\.ev", is not a topic name/),
    });
  });

  it('refuses topics made with another shard count', async () => {
    const prefix = uniquePrefix('shards');
    const store = await opened(testKafkaStore(prefix, { shards: 2 }));
    await store.close();
    await expect(testKafkaStore(prefix, { shards: 3 }).open()).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/has 2 partitions, got shards 3/),
    });
  });
});

describe.skipIf(!kafkaBrokers || !platformaticRuns)('the Kafka store across its clients', { timeout: 120_000 }, () => {
  it('reads on @platformatic/kafka what kafkajs wrote, and on kafkajs what @platformatic/kafka wrote after, fencing each other', async () => {
    const prefix = uniquePrefix('across');
    const stores: Store[] = [];
    const open = async (client: 'kafkajs' | 'platformatic') => {
      const store = testStore(prefix, {}, client);
      stores.push(store);
      await store.open();
      return store.log(0);
    };
    try {
      const first = await open('kafkajs');
      await Promise.all(['a', 'b'].map((r) => first.append(Buffer.from(r))));
      await first.writeSnapshot(1, Buffer.from('state@1'));
      const second = await open('platformatic');
      await expect(first.append(Buffer.from('zombie'))).rejects.toMatchObject({ code: 'STORE_FENCED' });
      expect((await second.readSnapshot())?.lsn).toBe(1);
      expect(await contents(second, 2)).toEqual([[2, 'b']]);
      expect(await second.append(Buffer.from('c'))).toBe(3);
      const third = await open('kafkajs');
      await expect(second.append(Buffer.from('zombie'))).rejects.toMatchObject({ code: 'STORE_FENCED' });
      expect(await contents(third, 2)).toEqual([
        [2, 'b'],
        [3, 'c'],
      ]);
    } finally {
      await Promise.allSettled(stores.map((s) => s.close()));
    }
  });
});
