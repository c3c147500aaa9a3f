/**
 * What bench/kafka-pace (b) restores: a pace store as a paced app leaves it after 2 events per key over K keys
 * (the second pass makes each shard snapshot: a host snapshots once its records since the last are twice its
 * keys) and one more event for a tenth of the keys (a tail after the snapshot).
 *
 * Built without `app.send`, whose 2.1 million calls at 1,000,000 keys take minutes here: per shard a
 * {@link ShardHost} with the app's pace rules, over the store's own shard log, is given the records
 * `Pacer.submit` makes for `app.send` (the key's shard, the run UUID when the event opens a window, the
 * event's data by `encodeEvent`), many per transaction; its `snapshot()` then writes the snapshot through the
 * log (`writeSnapshot`, which deletes the records it covers), as the host does once the snapshot is due; and
 * the tail goes in transactions of about as many records as the app's 1,000 concurrent senders make. So the
 * topics hold what the store itself wrote: the snapshot's chunks and head, the tail's packs. What differs
 * from an app's: no key is parked while the states are built (every key stays loaded, so the snapshot lists
 * them in the order they were last applied rather than the loaded ones first), and the records the snapshot
 * covers went in larger transactions (they are deleted). {@link checkBuild} compares the two builds.
 */
import { randomUUID } from 'node:crypto';
import { App, ManualClock, MemoryBroker, memoryStore, silentLogger, subscriber, type Store } from '../src/index.js';
import { eventOf } from '../src/app/pace-event.js';
import { parsePace } from '../src/declare/pace.js';
import { encodeEvent } from '../src/pace/codec.js';
import { EVENT, coordinatorKey, opensRun, paceRules, type PaceOutput, type PaceState } from '../src/pace/rules.js';
import { shardOf } from '../src/shard/shard-of.js';
import { ShardHost } from '../src/store/shard-host.js';

/** The paced subscriber's name and pace, and the clock's time, as the app of (b) has them. */
export const NAME = 'p';
export const PACE = { debounce: '1 hour' } as const;
export const T0 = 1_800_000_000_000;
/** Records a shard's transaction of the tail carries: 1,000 senders over 4 shards left about 150 (136 messages for 10,000 records at 100,000 keys). */
export const TAIL_PER_TRANSACTION = 150;
/** Records given at once (a transaction per shard) for the two passes. */
const PASS_CHUNK = 20_000;

/** The event the `pass`th pass sends to key number `i`. */
export const eventFor = (i: number, pass: number): { n: number; pass: number; amount: number } => ({
  n: i,
  pass,
  amount: 1999,
});
export const keyFor = (i: number): string => `customer-${i}`;

/** The app of (b) on `store`: a paced subscriber no window of which may close, a clock at T0. */
export function restoreApp(store: Store): App {
  const app = new App({ name: 'bench-restore', logger: silentLogger, store, clock: new ManualClock(T0) });
  return app.withBroker(new MemoryBroker(), (r) =>
    r.include(
      subscriber('t', () => {
        throw new Error('no window may close');
      })
        .name(NAME)
        .pace(PACE)
        .build(),
    ),
  );
}

/**
 * Writes into `store` (opened here, closed after; topics it creates) what (b)'s app leaves after its sends
 * over `keys` keys: see the header. Returns the seconds it took.
 */
export async function buildRestoreStore(store: Store, keys: number): Promise<number> {
  const t0 = performance.now();
  await store.open({ app: 'bench-restore', subscribers: [NAME] });
  const pace = parsePace(PACE, NAME);
  const rules = paceRules(new Map([[NAME, pace]]));
  const clock = new ManualClock(T0);
  const hosts = Array.from(
    { length: store.shards },
    (_, shard) =>
      new ShardHost<PaceState, PaceOutput>({
        log: store.log(shard),
        rules,
        clock,
        onOutput: () => {
          throw new Error('no window may close');
        },
        maxLoadedKeys: 2 ** 30, // none parked: see the header
        snapshotEvery: Number.MAX_SAFE_INTEGER, // taken below, where the app's would be due
      }),
  );
  try {
    for (const host of hosts) await host.open();
    // As Pacer.submit makes an `app.send`'s record.
    const send = (i: number, pass: number): Promise<unknown> => {
      const key = coordinatorKey(NAME, keyFor(i));
      const host = hosts[shardOf(key, store.shards)]!;
      const at = host.now();
      const opens = opensRun(host.core.state(key), pace, at);
      const data = encodeEvent(
        eventOf(NAME, pace, { key: keyFor(i), event: eventFor(i, pass) }, opens ? randomUUID() : ''),
      );
      return host.submit({ key, at, type: EVENT, data });
    };
    const pass = async (to: number, n: number, chunk: number): Promise<void> => {
      for (let i = 0; i < to; i += chunk) {
        const sent: Promise<unknown>[] = [];
        for (let j = i; j < Math.min(to, i + chunk); j++) sent.push(send(j, n));
        await Promise.all(sent);
      }
    };
    await pass(keys, 1, PASS_CHUNK);
    await pass(keys, 2, PASS_CHUNK);
    // Due in the app's host as its pass ends: at least `snapshotEvery` records, and twice as many as keys.
    for (const host of hosts)
      if (host.core.appliedLsn < Math.max(store.snapshotEvery ?? 10_000, 2 * host.core.keyCount))
        throw new Error(
          `shard ${host.shard}: no snapshot would be due (${host.core.appliedLsn} records, ${host.core.keyCount} keys)`,
        );
    const taken = await Promise.all(hosts.map((h) => h.snapshot()));
    if (!taken.every(Boolean)) throw new Error('a snapshot was not taken');
    await pass(Math.ceil(keys / 10), 3, TAIL_PER_TRANSACTION * store.shards);
  } finally {
    await Promise.all(hosts.map((h) => h.close()));
    await store.close();
  }
  return (performance.now() - t0) / 1000;
}

/** `SENDERS` loops sending one event to each of keys `from`..`to` with `app.send`. */
async function sendAll(app: App, from: number, to: number, pass: number, senders: number): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: senders }, async () => {
      for (let i = next++; i < to; i = next++) await app.send(NAME, { key: keyFor(i), event: eventFor(i, pass) });
    }),
  );
}

/**
 * The same contents made by the app itself, with `app.send` from 1,000 senders (what (b) did before, and does
 * with `BENCH_RESTORE_SETUP=sends`). Returns the seconds it took.
 */
export async function sendRestoreStore(store: Store, keys: number): Promise<number> {
  const app = restoreApp(store);
  await app.start();
  const t0 = performance.now();
  await sendAll(app, 0, keys, 1, 1_000);
  await sendAll(app, 0, keys, 2, 1_000);
  await app.idle();
  await new Promise((resolve) => setTimeout(resolve, 500)); // the snapshots, begun when the pass's last appends were durable
  await sendAll(app, 0, Math.ceil(keys / 10), 3, 1_000);
  const seconds = (performance.now() - t0) / 1000;
  await app.stop(); // waits for the snapshots under way
  return seconds;
}

/** A shard's snapshot (its LSN and entries) and tail, run UUIDs masked, entries sorted. */
async function contentsOf(store: Store): Promise<{ lsn: number | undefined; entries: string[]; tail: string[] }[]> {
  await store.open({ app: 'bench-restore', subscribers: [NAME] });
  const mask = (s: string): string =>
    s.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'UUID');
  const out = [];
  for (let shard = 0; shard < store.shards; shard++) {
    const log = store.log(shard);
    const snapshot = await log.readSnapshot();
    const entries = snapshot
      ? (JSON.parse(Buffer.from(snapshot.state).toString()) as { keys: unknown[] }).keys.map((e) =>
          mask(JSON.stringify(e)),
        )
      : [];
    const tail: string[] = [];
    await log.replay((snapshot?.lsn ?? 0) + 1, (_, r) => tail.push(mask(Buffer.from(r).toString())));
    out.push({ lsn: snapshot?.lsn, entries: entries.sort(), tail });
  }
  await store.close();
  return out;
}

/**
 * Builds `keys` keys both ways, each on a memoryStore of 4 shards, and throws unless every shard has the
 * same snapshot LSN, the same snapshot entries (in any order) and the same tail records, run UUIDs aside.
 */
export async function checkBuild(keys: number): Promise<void> {
  const built = memoryStore({ shards: 4 });
  const sent = memoryStore({ shards: 4 });
  const withEvery = (s: Store): Store => Object.assign(s, { snapshotEvery: 1_000 });
  await buildRestoreStore(withEvery(built), keys);
  await sendRestoreStore(withEvery(sent), keys);
  const [a, b] = [await contentsOf(built), await contentsOf(sent)];
  for (let shard = 0; shard < 4; shard++) {
    const x = a[shard]!;
    const y = b[shard]!;
    if (x.lsn !== y.lsn) throw new Error(`shard ${shard}: snapshot LSN ${x.lsn} built, ${y.lsn} sent`);
    if (x.entries.join('\n') !== y.entries.join('\n'))
      throw new Error(
        `shard ${shard}: the snapshots' entries differ (${x.entries.length} built, ${y.entries.length} sent)`,
      );
    if ([...x.tail].sort().join('\n') !== [...y.tail].sort().join('\n'))
      throw new Error(`shard ${shard}: the tails differ (${x.tail.length} built, ${y.tail.length} sent)`);
  }
}
