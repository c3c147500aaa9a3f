/**
 * `app.send` from any instance, with shards owned by partition (memory broker, a memory store standing in for
 * a Kafka store): a start whose key's partition another instance owns goes through the requests topic to that
 * owner, which answers on the replies topic; a retried eventId is a duplicate wherever it is sent; a request
 * sent while its partition changes hands waits for the next owner; requests read together are recorded
 * together, and answered and committed only as far as they were recorded.
 */
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  memoryStore,
  silentLogger,
  subscriber,
  SluiceError,
  type ConsumeRequest,
  type MemoryStore,
  type PaceOptions,
  type RunInfo,
  type ShardLog,
} from '../../src/index.js';
import { Gate, runIdOf, turns } from '../helpers.js';

const T0 = 1_000_000;
const PARTITIONS = 4;
const REQUESTS = 'owners.ev.requests';

interface Seen {
  readonly instance: string;
  readonly run: RunInfo;
  readonly events: readonly unknown[];
}

/** An instance of the app `owners`: a batched subscriber of topic `ev`; `hold` may hold a key's run. */
function instance(
  name: string,
  broker: MemoryBroker,
  store: MemoryStore,
  clock: ManualClock,
  seen: Seen[],
  hold?: { key: string; running: Gate; release: Gate },
) {
  return new App({ name: 'owners', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
    broker,
    (b) =>
      b.include(
        subscriber('ev', async (events: unknown[], ctx) => {
          seen.push({ instance: name, run: ctx.run!, events });
          if (hold && ctx.run!.key === hold.key) {
            hold.running.open();
            await hold.release.promise;
          }
        })
          .name('ev')
          .workers(4)
          .pace({ batch: { wait: '1 s' } })
          .build(),
      ),
  );
}

/** A key that the broker puts in partition `p` (the `n`th such). */
function keyIn(broker: MemoryBroker, p: number, n = 0): string {
  for (let i = 0, found = 0; ; i++)
    if (broker.partitionOf(`key-${i}`, PARTITIONS) === p && found++ === n) return `key-${i}`;
}

function setup() {
  const clock = new ManualClock(T0);
  const broker = new MemoryBroker({ partitions: PARTITIONS, now: () => clock.now() });
  const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
  return { clock, broker, store, seen: [] as Seen[] };
}

/**
 * Two instances, `a` first (it owns every partition), then `b` joining: resolves once `a` has handed partition
 * 1's shard over and nobody reads partition 1 of the requests topic (a run of partition 0 holds the rest of
 * the hand-over). `handOver` lets it finish and resolves once `b` owns partition 1, with the receipt of the
 * first send answered meanwhile. `runs` counts the messages of each run of requests `b` handles.
 * `refuseAppend: n`: the `n`th append to `b`'s log of shard 1 throws, once, as a fenced log's does.
 */
async function partitionOneMoving(options: { refuseAppend?: number } = {}) {
  const { clock, broker, store, seen } = setup();
  const held = keyIn(broker, 0);
  const hold = { key: held, running: new Gate(), release: new Gate() };
  const a = instance('a', broker, store, clock, seen, hold);
  const b = instance('b', broker, store, clock, seen);
  await a.start(); // a owns every partition
  await a.send('ev', { key: held, event: 'held' });
  await clock.advance(1_000);
  await hold.running.promise; // the run of partition 0 holds a's hand-over of its shards
  const shardOneClosed = new Gate();
  const openShard = store.openShard!.bind(store);
  const closeShard = store.closeShard!.bind(store);
  store.closeShard = async (shard) => {
    await closeShard(shard);
    if (shard === 1) shardOneClosed.open();
  };
  store.openShard = async (shard) => {
    const log = await openShard(shard);
    if (shard === 1 && options.refuseAppend !== undefined) refuseOnce(log, options.refuseAppend);
    return log;
  };
  const runs: number[] = [];
  countRuns(broker, runs);
  const bStarted = b.start(); // a rebalance: a hands its shards over, then b gets partitions 1 and 3
  await shardOneClosed.promise;
  const handOver = async (): Promise<void> => {
    hold.release.open();
    await bStarted;
  };
  return { clock, broker, seen, held, a, b, runs, handOver };
}

/** Counts, in `runs`, the messages of each run of requests handed to the consumers `broker` starts from now on. */
function countRuns(broker: MemoryBroker, runs: number[]): void {
  const consume = broker.consume.bind(broker);
  broker.consume = (request) => {
    const requests = request.requests;
    if (requests === undefined) return consume(request);
    const handle: NonNullable<ConsumeRequest['requests']>['handle'] = (partition, messages) => {
      runs.push(messages.length);
      return requests.handle(partition, messages);
    };
    return consume({ ...request, requests: { topic: requests.topic, handle } });
  };
}

/** `log`'s `n`th append throws `STORE_FENCED` (before an LSN is given, as a fenced log's does); the others pass. */
function refuseOnce(log: ShardLog, n: number): void {
  const append = log.append.bind(log);
  let appends = 0;
  log.append = (record) => {
    if (++appends === n) throw new SluiceError('STORE_FENCED', 'test: this append is refused');
    return append(record);
  };
}

describe('app.send routed to the owner of the key’s partition (memory broker, two instances)', () => {
  it('either instance takes any key: a retried eventId on the other is a duplicate of the same run, which runs once', async () => {
    const { clock, broker, store, seen } = setup();
    const a = instance('a', broker, store, clock, seen);
    const b = instance('b', broker, store, clock, seen);
    await a.start();
    await b.start();
    const runs = new Map<string, string>();
    for (let p = 0; p < PARTITIONS; p++) {
      const key = keyIn(broker, p);
      const first = await a.send('ev', { key, event: { p }, eventId: `e-${p}` });
      expect(first).toMatchObject({ kind: 'run', duplicate: false });
      const again = await b.send('ev', { key, event: { p, again: true }, eventId: `e-${p}` });
      expect(again).toEqual({ ...first, duplicate: true });
      runs.set(key, runIdOf(first));
    }
    // Each partition is owned by one of the two: exactly one of its two sends went through the requests topic.
    expect(broker.messages(REQUESTS)).toHaveLength(PARTITIONS);
    await clock.advance(1_000);
    await Promise.all([a.idle(), b.idle()]);
    expect(seen.map((s) => [s.run.key, s.run.id]).sort()).toEqual([...runs].sort());
    expect(seen.every((s) => s.events.length === 1)).toBe(true);
    // Each instance read the replies in a group of its own, deleted as it stops.
    const replies = () => broker.groupNames().filter((g) => g.includes('.replies.'));
    expect(replies()).toHaveLength(2);
    await Promise.all([a.stop(), b.stop()]);
    expect(replies()).toEqual([]);
  });

  it('without an eventId, starts sent to either instance join one run per key', async () => {
    const { clock, broker, store, seen } = setup();
    const a = instance('a', broker, store, clock, seen);
    const b = instance('b', broker, store, clock, seen);
    await a.start();
    await b.start();
    const receipts = [];
    for (let p = 0; p < PARTITIONS; p++) {
      const key = keyIn(broker, p);
      receipts.push(await a.send('ev', { key, event: 1 }), await b.send('ev', { key, event: 2 }));
    }
    expect(receipts.every((r) => r.kind === 'run' && !r.duplicate)).toBe(true);
    await clock.advance(1_000);
    await Promise.all([a.idle(), b.idle()]);
    expect(seen).toHaveLength(PARTITIONS);
    expect(seen.every((s) => s.events.length === 2)).toBe(true);
    await Promise.all([a.stop(), b.stop()]);
  });

  it('a send while the key’s partition moves waits in the requests topic and is answered by the new owner', async () => {
    const t = await partitionOneMoving();
    let answered = false;
    const moved = keyIn(t.broker, 1);
    const sent = t.a.send('ev', { key: moved, event: 'moved', eventId: 'moved-1' }).finally(() => (answered = true));
    await turns(5);
    expect(answered).toBe(false); // nobody owns partition 1 now: the request waits
    expect(t.broker.messages(REQUESTS).map((m) => m.partition)).toEqual([1]);
    await t.handOver();
    const receipt = await sent;
    expect(receipt).toMatchObject({ kind: 'run', duplicate: false });
    await t.clock.advance(1_000);
    await Promise.all([t.a.idle(), t.b.idle()]);
    const run = t.seen.find((s) => s.run.key === moved)!;
    expect(run).toMatchObject({ instance: 'b', events: ['moved'] });
    expect(run.run.id).toBe(runIdOf(receipt));
    expect(t.broker.committed('owners', REQUESTS)[1]).toBe(1); // committed once answered
    await Promise.all([t.a.stop(), t.b.stop()]);
  });

  it('requests read together are recorded together: one that repeats an earlier one’s eventId is its duplicate', async () => {
    const t = await partitionOneMoving();
    const [k1, k2] = [keyIn(t.broker, 1), keyIn(t.broker, 1, 1)];
    const sent = [
      t.a.send('ev', { key: k1, event: 'first', eventId: 'twice' }),
      t.a.send('ev', { key: k1, event: 'again', eventId: 'twice' }),
      t.a.send('ev', { key: k2, event: 'other' }),
    ];
    await turns(5);
    expect(t.broker.messages(REQUESTS)).toHaveLength(3); // waiting together for partition 1's next owner
    await t.handOver();
    const [first, again, other] = await Promise.all(sent);
    expect(t.runs).toEqual([3]); // the next owner handled the three in one run
    expect(first).toMatchObject({ kind: 'run', duplicate: false });
    expect(again).toEqual({ ...first, duplicate: true });
    expect(other).toMatchObject({ kind: 'run', duplicate: false });
    expect(t.broker.committed('owners', REQUESTS)[1]).toBe(3);
    await t.clock.advance(1_000);
    await Promise.all([t.a.idle(), t.b.idle()]);
    const events = Object.fromEntries(t.seen.map((s) => [s.run.key, s.events]));
    expect(events).toEqual({ [t.held]: ['held'], [k1]: ['first'], [k2]: ['other'] });
    await Promise.all([t.a.stop(), t.b.stop()]);
  });

  it('a run of requests recorded only in part: the rest is not answered or committed until it is recorded, once', async () => {
    const t = await partitionOneMoving({ refuseAppend: 2 }); // the next owner's log refuses its second append
    const keys = [0, 1, 2].map((n) => keyIn(t.broker, 1, n));
    const answered: string[] = [];
    const sent = keys.map((key, n) =>
      t.a.send('ev', { key, event: n, eventId: `e-${n}` }).then((r) => {
        answered.push(key);
        return r;
      }),
    );
    await turns(5);
    await t.handOver();
    await turns(5);
    // The first and third are durable, answered; the second was not recorded: it and those after it stay.
    expect(answered.sort()).toEqual([keys[0], keys[2]].sort());
    expect(t.broker.committed('owners', REQUESTS)[1]).toBe(1);
    // The next arrival reads them again: the second is recorded now, the third is taken once (a duplicate).
    const fourth = await t.a.send('ev', { key: keys[0]!, event: 'later', eventId: 'e-later' });
    const receipts = await Promise.all(sent);
    expect(receipts.every((r) => r.kind === 'run' && !r.duplicate)).toBe(true);
    expect(t.runs).toEqual([3, 3]);
    expect(t.broker.committed('owners', REQUESTS)[1]).toBe(4);
    await t.clock.advance(1_000);
    await Promise.all([t.a.idle(), t.b.idle()]);
    const events = Object.fromEntries(t.seen.map((s) => [s.run.key, s.events]));
    expect(events).toEqual({ [t.held]: ['held'], [keys[0]!]: [0, 'later'], [keys[1]!]: [1], [keys[2]!]: [2] });
    expect(runIdOf(fourth)).toBe(runIdOf(receipts[0]!));
    await Promise.all([t.a.stop(), t.b.stop()]);
  });

  it('a key’s drop rate holds across instances: it counts every start, whichever instance took it', async () => {
    const { clock, broker, store } = setup();
    const started: { instance: string; key: string; at: number }[] = [];
    const rated = (name: string, pace: PaceOptions) =>
      new App({ name: 'owners', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
        broker,
        (b) =>
          b.include(
            subscriber('ev', (_event: unknown, ctx) => {
              started.push({ instance: name, key: ctx.run!.key, at: clock.now() });
            })
              .name('ev')
              .workers(4)
              .pace(pace)
              .build(),
          ),
      );
    const a = rated('a', { drop: { max: 2, per: '1 min' } });
    const b = rated('b', { drop: { max: 2, per: '1 min' } });
    await a.start();
    await b.start();
    const keys = [keyIn(broker, 0), keyIn(broker, 1)]; // owned by different instances
    const receipts = [];
    for (let i = 0; i < 6; i++)
      for (const key of keys) receipts.push(await [a, b][i % 2]!.send('ev', { key, event: { i } }));
    await Promise.all([a.idle(), b.idle()]);
    // Per key: 2 runs in the minute, the other 4 starts dropped, though each instance sent half of them.
    for (const key of keys) expect(started.filter((s) => s.key === key)).toHaveLength(2);
    expect(receipts.filter((r) => r.kind === 'dropped')).toEqual(Array(8).fill({ kind: 'dropped', dropped: true }));
    await Promise.all([a.stop(), b.stop()]);
  });
  it('a store on another Kafka cluster than the subscriber’s is refused at start, before anything joins', async () => {
    const { clock, broker, store, seen } = setup();
    const on = (cluster: string) => Object.assign(store, { clusterId: () => Promise.resolve(cluster) });
    Object.assign(broker, { clusterId: () => Promise.resolve('cluster-a') });
    const elsewhere = instance('a', broker, on('cluster-b'), clock, seen);
    const refused = await elsewhere.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(SluiceError);
    expect((refused as SluiceError).code).toBe('CONFIG_INVALID');
    expect((refused as SluiceError).message).toMatch(/cluster "cluster-b".*reads cluster "cluster-a"/);
    const same = instance('b', broker, on('cluster-a'), clock, seen);
    await same.start();
    expect(await same.send('ev', { key: keyIn(broker, 0), event: {} })).toMatchObject({ kind: 'run' });
    await same.stop();
  });
});
