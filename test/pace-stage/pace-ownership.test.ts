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
  memoryStore,
  silentLogger,
  subscriber,
  type MemoryStore,
  type RunInfo,
} from '../../src/index.js';
import { Waiters } from '../../src/core/waiters.js';

const T0 = 1_000_000;
const PARTITIONS = 4;
const KEYS = 24;

interface Seen {
  readonly instance: string;
  readonly run: RunInfo;
  readonly events: readonly { key: string; n: number }[];
}

/** An instance of the app `owners` (one group): a batched subscriber of topic `ev` recording its runs. */
function instance(
  name: string,
  broker: MemoryBroker,
  store: MemoryStore,
  clock: ManualClock,
  seen: Seen[],
  workers = 4,
) {
  return new App({ name: 'owners', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
    broker,
    (b) =>
      b.include(
        subscriber('ev', (events: { key: string; n: number }[], ctx) => {
          seen.push({ instance: name, run: ctx.run!, events });
        })
          .name('ev')
          .workers(workers)
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

  /**
   * The session of the next consumer of `ev` that `broker` makes, as a Kafka consumer tells it (`Consumer.inSession`):
   * while `lapsed`, the group may have given its partitions away (the instance stalled past its session).
   */
  function gateNextConsumer(broker: MemoryBroker) {
    const changed = new Waiters();
    const session = {
      lapsed: false,
      /** Runs that asked and were told to wait. */
      held: 0,
      renew(): void {
        session.lapsed = false;
        changed.wake();
      },
    };
    const consume = broker.consume.bind(broker);
    broker.consume = async (request) => {
      const consumer = await consume(request);
      if (request.topic !== 'ev') return consumer; // the replies of routed sends, say
      broker.consume = consume;
      consumer.inSession = () => {
        if (!session.lapsed) return true;
        session.held++;
        return changed.next();
      };
      return consumer;
    };
    return session;
  }

  /** Lets the event loop turn until `done` holds (each turn runs what is due; nothing here waits on time). */
  async function turnsUntil(done: () => boolean): Promise<void> {
    for (let turn = 0; !done(); turn++) {
      if (turn > 10_000) throw new Error('never happened');
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * One instance, `a`, whose runs of 3 events a key wait to start, its session lapsed (as a process thawed after a
   * stop past its session timeout) when its windows closed: one held per worker (`workers`, 4 by default).
   * `before` sees the broker and the session first.
   */
  async function lapsedWithRunsWaiting(
    workers?: number,
    before?: (broker: MemoryBroker, session: ReturnType<typeof gateNextConsumer>) => void,
  ) {
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS } });
    const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
    const seen: Seen[] = [];
    const session = gateNextConsumer(broker);
    before?.(broker, session);
    const a = instance('a', broker, store, clock, seen, workers);
    await a.start();
    await publish(broker, 0, 3);
    await a.idle();
    session.lapsed = true;
    await clock.advance(1_000); // every window closes; its run leaves for the workers, and waits there
    await turnsUntil(() => session.held >= (workers ?? 4)); // one per worker
    return { clock, broker, store, seen, session, a };
  }

  it('a run whose instance is not sure the group still counts its partition as its own waits to start until it is', async () => {
    const { seen, session, a } = await lapsedWithRunsWaiting();
    expect(seen).toEqual([]);
    session.renew(); // the coordinator answered: still a member, with the same partitions
    await a.idle();
    expectOneRunPerKey(seen, 3);
    await a.stop();
  });

  it('a run waiting to start because its instance’s session lapsed does not start there once its shard is handed over', async () => {
    const { clock, broker, store, seen, session, a } = await lapsedWithRunsWaiting();
    const b = instance('b', broker, store, clock, seen);
    await b.start(); // a hands its shards over, with the runs waiting in them; b runs them, under their IDs
    await b.idle();
    expect(seen.filter((s) => s.instance === 'a')).toEqual([]);
    session.renew();
    await Promise.all([a.idle(), b.idle()]);
    expectOneRunPerKey(seen, 3);
    expect(seen.some((s) => s.instance === 'b')).toBe(true);
    await Promise.all([a.stop(), b.stop()]);
  });

  it('a run waiting to start does not start once its partition’s revoke began, even if the group answers before the shard is handed over', async () => {
    // The coordinator answers as the revoke begins (a thawed member's rejoin): the revoke's deliveries are
    // still settling, and the shard is not handed over yet. A worker for every run: each waits to start.
    const { clock, broker, store, seen, a } = await lapsedWithRunsWaiting(KEYS, (broker, session) => {
      const consume = broker.consume.bind(broker);
      broker.consume = (request) =>
        consume({
          ...request,
          onRevoke: (partitions) => {
            const revoked = request.onRevoke(partitions);
            session.renew();
            return revoked;
          },
        });
    });
    const b = instance('b', broker, store, clock, seen);
    await b.start();
    await Promise.all([a.idle(), b.idle()]);
    // The runs of the partitions that moved ran on b only; a ran only those of partitions it kept.
    const moved = new Set(seen.filter((s) => s.instance === 'b').map((s) => s.run.key));
    expect(moved.size).toBeGreaterThan(0);
    expect(seen.filter((s) => s.instance === 'a' && moved.has(s.run.key))).toEqual([]);
    expectOneRunPerKey(seen, 3);
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

describe('pace, shards owned by partition, a pace key that is not the message key (memory broker)', () => {
  it('a key whose events come through several partitions gathers them in one window, on its partition’s owner', async () => {
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS } });
    const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
    const seen: Seen[] = [];
    const make = (name: string) =>
      new App({ name: 'owners', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
        broker,
        (b) =>
          b.include(
            subscriber('ev', (events: { key: string; n: number }[], ctx) => {
              seen.push({ instance: name, run: ctx.run!, events });
            })
              .name('ev')
              .key(({ value }) => (value as unknown as { key: string }).key) // the pace key: the event's
              .workers(4)
              .pace({ batch: { wait: '1 s' } })
              .build(),
          ),
      );
    const a = make('a');
    const b = make('b');
    await a.start();
    await b.start();
    // Each event of a key goes out under a message key of its own, so a key's events land in every partition.
    for (let n = 0; n < 6; n++)
      for (let k = 0; k < KEYS; k++) await broker.publish('ev', { key: `k${k}`, n }, { key: `m${k}-${n}` });
    await Promise.all([a.idle(), b.idle()]);
    await clock.advance(1_000);
    await Promise.all([a.idle(), b.idle()]);
    const byKey = new Map<string, Seen[]>();
    for (const s of seen) byKey.set(s.run.key, [...(byKey.get(s.run.key) ?? []), s]);
    expect(byKey.size).toBe(KEYS);
    for (const [key, runs] of byKey) {
      expect(runs.length, key).toBe(1);
      expect(runs[0]!.events.map((e) => e.n).sort()).toEqual([0, 1, 2, 3, 4, 5]);
      // On the owner of the pace key's partition.
      const owner = broker.partitionOf(key, PARTITIONS);
      expect(runs[0]!.instance === 'a' ? [0, 2] : [1, 3]).toContain(owner);
    }
    await Promise.all([a.stop(), b.stop()]);
  });
});

describe('pace, shards owned by partition: a fenced owner, work let go at a revoke', () => {
  it('an instance whose shard another opened takes no send for it: nothing is recorded, and nothing left unhandled', async () => {
    const clock = new ManualClock(T0);
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS } });
    const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
    const a = instance('a', broker, store, clock, []);
    await a.start();
    const key = keyIn(broker, 1);
    await a.send('ev', { key, event: { key, n: 0 } }); // durable: the shard has a record
    const other = await store.openShard!(1); // as an instance that took partition 1 from a cut-off one would
    // Before, the fenced log's rejected append left the record under the last LSN: a RangeError, and the
    // append's rejection unhandled. Now the local append is refused (STORE_FENCED) and the send goes to the
    // requests topic for the partition's owner: here none answers, so it times out.
    const sending = a.send('ev', { key, event: { key, n: 1 } }).catch((error: unknown) => error);
    await turns(20);
    await clock.advance(30_000); // sendTimeoutMs
    expect(await sending).toMatchObject({ code: 'SEND_TIMEOUT' });
    expect(other.durableLsn()).toBe(1); // only the first event
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
