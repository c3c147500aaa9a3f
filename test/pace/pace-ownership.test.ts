/**
 * Pace with shards owned by partition, on the memory broker and a memory store that stands in for a Kafka
 * store: several instances of one app share a consumer group, and shard p goes with partition p. A window
 * opened on one instance and handed over by a rebalance runs once, on its new owner, with every event; an
 * instance that leaves for good loses nothing; a shard opened elsewhere fences its last owner.
 */
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  SluiceError,
  memoryStore,
  silentLogger,
  subscriber,
  type MemoryStore,
  type RunInfo,
} from '../../src/index.js';

const T0 = 1_000_000;
const PARTITIONS = 4;
const KEYS = 24;

interface Seen {
  readonly instance: string;
  readonly run: RunInfo;
  readonly events: readonly { key: string; n: number }[];
}

/** An instance of the app `owners` (one group): a batched subscriber of topic `ev` recording its runs. */
function instance(name: string, broker: MemoryBroker, store: MemoryStore, clock: ManualClock, seen: Seen[]) {
  return new App({ name: 'owners', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
    broker,
    (b) =>
      b.include(
        subscriber('ev', (events: { key: string; n: number }[], ctx) => {
          seen.push({ instance: name, run: ctx.run!, events });
        })
          .name('ev')
          .workers(4)
          .pace({ batch: { wait: '1 s' } })
          .build(),
      ),
  );
}

/** Publishes events `from`..`to` (exclusive) of every key, keyed by the key. */
async function publish(broker: MemoryBroker, from: number, to: number): Promise<void> {
  for (let n = from; n < to; n++)
    for (let k = 0; k < KEYS; k++) await broker.publish('ev', { key: `k${k}`, n }, { key: `k${k}` });
}

/** Every key ran once, with all `events` of its window in order, on one instance. */
function expectOneRunPerKey(seen: readonly Seen[], events: number): void {
  const byKey = new Map<string, Seen[]>();
  for (const s of seen) byKey.set(s.run.key, [...(byKey.get(s.run.key) ?? []), s]);
  expect(byKey.size).toBe(KEYS);
  for (const [key, runs] of byKey) {
    expect(runs.map((r) => r.run.id).length, key).toBe(1);
    expect(runs[0]!.events.map((e) => e.n)).toEqual(Array.from({ length: events }, (_, i) => i));
  }
}

describe('pace, shards owned by partition (memory broker, two instances)', () => {
  it('a window open when a second instance joins runs once, on the owner of its partition, with every event', async () => {
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS } });
    const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
    const seen: Seen[] = [];
    const a = instance('a', broker, store, clock, seen);
    await a.start();
    await publish(broker, 0, 3);
    await a.idle(); // journaled on a, every window open
    const b = instance('b', broker, store, clock, seen);
    await b.start(); // a rebalance: a hands every shard over, then each takes its share back from the store
    await publish(broker, 3, 6);
    await Promise.all([a.idle(), b.idle()]);
    await clock.advance(1_000);
    await Promise.all([a.idle(), b.idle()]);
    expectOneRunPerKey(seen, 6);
    // Both instances ran windows: the shards were shared.
    expect(new Set(seen.map((s) => s.instance))).toEqual(new Set(['a', 'b']));
    await Promise.all([a.stop(), b.stop()]);
  });

  it('an instance that leaves for good hands its open windows to the one that stays', async () => {
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS } });
    const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
    const seen: Seen[] = [];
    const a = instance('a', broker, store, clock, seen);
    const b = instance('b', broker, store, clock, seen);
    await a.start();
    await b.start();
    await publish(broker, 0, 4);
    await Promise.all([a.idle(), b.idle()]);
    await a.stop(); // for good: b takes every partition and restores a's shards
    await b.idle();
    await clock.advance(1_000);
    await b.idle();
    expectOneRunPerKey(seen, 4);
    expect(new Set(seen.map((s) => s.instance))).toEqual(new Set(['b']));
    await b.stop();
  });

  it('app.send is taken by the instance that owns the key’s partition, and refused elsewhere with SHARD_NOT_OWNED', async () => {
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS } });
    const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
    const seen: Seen[] = [];
    const a = instance('a', broker, store, clock, seen);
    const b = instance('b', broker, store, clock, seen);
    await a.start();
    await b.start();
    const owner = new Map<number, App>();
    const apps = [a, b];
    for (const app of apps)
      for (let p = 0; p < PARTITIONS; p++) {
        const probe = await app
          .send('ev', { key: keyIn(broker, p), event: { key: keyIn(broker, p), n: 0 }, eventId: `probe-${p}` })
          .then(
            () => true,
            (error: unknown) => {
              expect(error).toBeInstanceOf(SluiceError);
              expect((error as SluiceError).code).toBe('SHARD_NOT_OWNED');
              return false;
            },
          );
        if (probe) owner.set(p, app);
      }
    expect(owner.size).toBe(PARTITIONS); // each partition's key taken by exactly one instance
    expect(new Set(owner.values()).size).toBe(2);
    // A retry of the same eventId on the owner is a duplicate of the first.
    const again = await owner
      .get(0)!
      .send('ev', { key: keyIn(broker, 0), event: { key: 'x', n: 1 }, eventId: 'probe-0' });
    expect(again).toMatchObject({ kind: 'run', duplicate: true });
    await Promise.all([a.stop(), b.stop()]);
  });

  it('a store owned by partition refuses a topic whose partition count is not its shard count, at start', async () => {
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS + 1 } });
    const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
    const a = instance('a', broker, store, new ManualClock(T0), []);
    await expect(a.start()).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/5 partitions.*4 shards/),
    });
  });

  it('opening a shard fences its last owner: its pending appends reject with STORE_FENCED, its later ones throw it', async () => {
    const store = memoryStore({ shards: 2, ownership: 'partition' });
    await store.open();
    const first = await store.openShard!(1);
    expect(await first.append(Buffer.from('kept'))).toBe(1);
    const pending = first.append(Buffer.from('lost')).catch((error: unknown) => error);
    const second = await store.openShard!(1);
    expect(await pending).toMatchObject({ code: 'STORE_FENCED' });
    // Refused before an LSN is given, as the file and Kafka logs refuse an append once failed.
    expect(() => first.append(Buffer.from('late'))).toThrow(expect.objectContaining({ code: 'STORE_FENCED' }));
    expect(first.assignedLsn()).toBe(1);
    const records: string[] = [];
    await second.replay(1, (_lsn, r) => records.push(Buffer.from(r).toString()));
    expect(records).toEqual(['kept']);
    expect(await second.append(Buffer.from('next'))).toBe(2);
  });
});

describe('pace, shards owned by partition: a fenced owner, work let go at a revoke', () => {
  it('an instance whose shard another opened refuses app.send with STORE_FENCED (nothing left unhandled)', async () => {
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS } });
    const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
    const a = instance('a', broker, store, clock, []);
    await a.start();
    const key = keyIn(broker, 1);
    await a.send('ev', { key, event: { key, n: 0 } }); // durable: the shard has a record
    await store.openShard!(1); // as an instance that took partition 1 from a cut-off one would
    // Before, the fenced log's rejected append left the record under the last LSN: a RangeError, and the
    // append's rejection unhandled.
    await expect(a.send('ev', { key, event: { key, n: 1 } })).rejects.toMatchObject({ code: 'STORE_FENCED' });
    await expect(a.send('ev', { key, event: { key, n: 2 } })).rejects.toBeInstanceOf(SluiceError);
    await a.stop();
  });

  it('a run let go at a revoke’s deadline is not retried once its shard was handed over, even back to the same instance', async () => {
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker({ topics: { ev: 1 } });
    const store = memoryStore({ shards: 1, ownership: 'partition' });
    const calls: { runId: string; attempt: number }[] = [];
    let failFirst: (error: Error) => void = () => {};
    const app = () =>
      new App({ name: 'owners', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
        broker,
        (b) =>
          b.include(
            subscriber('ev', (_events: unknown, ctx) => {
              calls.push({ runId: ctx.run!.id, attempt: ctx.message.attempt });
              // The first call hangs past the revoke's deadline, and fails after the hand-over.
              if (calls.length === 1) return new Promise<void>((_resolve, reject) => (failFirst = reject));
              return undefined;
            })
              .name('ev')
              .pace({ batch: { wait: '1 s' } })
              .retry({ attempts: 3, backoff: { initialMs: 100, maxMs: 100 } })
              .build(),
          ),
      );
    const a = app();
    await a.start();
    await a.send('ev', { key: 'k', event: { n: 0 } });
    await clock.advance(1_000);
    await turns(20);
    expect(calls).toHaveLength(1); // running on a, and held
    const b = app();
    const joined = b.start(); // a revokes partition 0: its run is out, so it waits for the deadline
    await turns(20);
    await clock.advance(1_000); // the deadline: the shard is handed over, its run let go
    await joined; // partition 0 is dealt to a again (the first member): a restores the shard, resumes the run
    await turns(20);
    failFirst(new Error('the first call fails at last')); // the resumed run, held behind it by its key, goes
    await turns(20);
    await clock.advance(1_000); // past the retry's backoff
    await turns(20);
    await clock.advance(1_000);
    await turns(20);
    // Before, the first call's failure was retried too: the run ran a third time, after it had finished.
    const id = calls[0]!.runId;
    expect(calls).toEqual([
      { runId: id, attempt: 1 },
      { runId: id, attempt: 1 },
    ]);
    await Promise.all([a.stop(), b.stop()]);
  });
});

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A key that the broker puts in partition `p`. */
function keyIn(broker: MemoryBroker, p: number): string {
  for (let i = 0; ; i++) if (broker.partitionOf(`probe-${i}`, PARTITIONS) === p) return `probe-${i}`;
}
