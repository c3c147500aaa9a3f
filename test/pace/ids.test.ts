import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  memoryStore,
  silentLogger,
  subscriber,
  type MemoryStore,
  type Receipt,
} from '../../src/index.js';
import type { CompiledPace } from '../../src/pace/config.js';
import {
  coordinatorKey,
  EVENT,
  paceRules,
  type PaceOutput,
  type PaceReply,
  type PaceState,
} from '../../src/pace/rules.js';
import { ShardHost } from '../../src/pace-stage/shard-host.js';
import { runIdOf } from '../helpers.js';
import { paceCore } from './core.js';

/** Event IDs that are names of Object.prototype's properties, one that is not, and lone surrogates. */
const PROTO_IDS = [
  'constructor',
  'toString',
  'hasOwnProperty',
  '__proto__',
  'valueOf',
  'isPrototypeOf',
  'e1',
  '\uD800',
  '\uDC00',
];
/** Keys that UTF-8 cannot tell apart (lone surrogates become U+FFFD), and U+FFFD itself. */
const KEYS = ['\uD800', '\uDC00', '\uFFFD', 'a\uDBFFb', 'plain'];

const EACH: CompiledPace = { kind: 'each', dedupMs: 10_000 };

/** A ShardHost with the pace rules of subscriber `p` (each start a run), keeping at most `maxLoadedKeys` loaded. */
async function paceHost(store: MemoryStore, clock: ManualClock, maxLoadedKeys: number) {
  const h = new ShardHost<PaceState, PaceOutput>({
    log: store.log(0),
    rules: paceRules(new Map([['p', EACH]])),
    clock,
    onOutput: () => {},
    maxLoadedKeys,
  });
  await h.open();
  let n = 0;
  const send = async (key: string, id: string): Promise<PaceReply> =>
    (await h.submit({ key: coordinatorKey('p', key), type: EVENT, data: { e: { key, id }, r: `u${n++}`, id } }))
      .reply as PaceReply;
  return { h, send };
}

describe("pace: event IDs and keys are the user's strings, exactly", () => {
  it('takes event IDs named like Object.prototype properties as IDs like any other (app.send)', async () => {
    const clock = new ManualClock(0);
    const ran: string[] = [];
    const app = new App({ name: 'ids', logger: silentLogger, clock, store: memoryStore() }).withBroker(
      new MemoryBroker(),
      (b) =>
        b.include(
          subscriber('t', (e: { id: string }) => void ran.push(e.id))
            .name('ev')
            .pace({ debounce: { window: 10 } })
            .build(),
        ),
    );
    await app.start();
    const first = new Map<string, Receipt>();
    for (const id of PROTO_IDS) {
      const r = await app.send('ev', { key: 'd', event: { id }, eventId: id });
      expect(r).toEqual({ kind: 'run', runId: expect.stringMatching(/^d@/), duplicate: false });
      first.set(id, r);
      await clock.advance(10); // each in a window of its own
      await app.idle();
    }
    expect(ran).toEqual(PROTO_IDS);
    for (const id of PROTO_IDS)
      expect(await app.send('ev', { key: 'd', event: { id }, eventId: id })).toEqual({
        ...first.get(id),
        duplicate: true,
      });
    await clock.advance(10);
    await app.idle();
    expect(ran).toEqual(PROTO_IDS); // the duplicates added nothing
    await app.stop();
  });

  it('keeps lone-surrogate keys and prototype-named IDs apart and exact: loaded, parked, replayed from the journal and read from a snapshot', async () => {
    const clock = new ManualClock(0);
    let store = memoryStore({ shards: 1 });
    // maxLoadedKeys 1: all keys but the latest are parked.
    let { h, send } = await paceHost(store, clock, 1);
    const receipts = new Map<string, PaceReply>();
    for (const key of KEYS) for (const id of PROTO_IDS) receipts.set(`${key}|${id}`, await send(key, id));
    const runIds = [...receipts.values()].map((r) => runIdOf(r));
    expect(new Set(runIds).size).toBe(KEYS.length * PROTO_IDS.length); // every start a run of its own
    expect(h.core.parkedCount).toBe(KEYS.length - 1);

    /** Every (key, ID) is a duplicate of its first receipt; the keys held are exactly KEYS, each with every ID. */
    const check = async (where: string): Promise<void> => {
      expect([...h.core.keys()].sort(), where).toEqual(KEYS.map((k) => coordinatorKey('p', k)).sort());
      for (const key of KEYS) {
        const state = h.core.state(coordinatorKey('p', key))!;
        expect(
          state.running.map((r) => (r.events[0] as { key: string }).key),
          where,
        ).toEqual(PROTO_IDS.map(() => key));
      }
      for (const key of KEYS)
        for (const id of PROTO_IDS)
          expect(await send(key, id), `${where} ${JSON.stringify(key)} ${id}`).toEqual({
            ...receipts.get(`${key}|${id}`),
            duplicate: true,
          });
      expect(h.core.keyCount).toBe(KEYS.length);
    };
    await check('parked');

    store = store.crash(); // no snapshot: replayed from the journal
    ({ h, send } = await paceHost(store, clock, 1));
    await check('journal');

    expect(await h.snapshot()).toBe(true);
    store = store.crash(); // the snapshot alone: every record is in it
    ({ h, send } = await paceHost(store, clock, 1));
    expect(h.core.appliedLsn).toBe(store.log(0).durableLsn());
    await check('snapshot');

    store = store.crash(); // and everything loaded (no parking) from the snapshot and the journal after it
    ({ h, send } = await paceHost(store, clock, 1_000));
    expect(h.core.parkedCount).toBe(0);
    await check('loaded');
  });

  it('snapshots a key as it was when the snapshot began, though its IDs change in place meanwhile', async () => {
    const clock = new ManualClock(0);
    let store = memoryStore({ shards: 1 });
    let { h, send } = await paceHost(store, clock, 1_000);
    for (const id of ['a', 'b']) await send('k', id);
    const { lsn } = h.core.beginSnapshot();
    for (const id of ['c', 'constructor']) await send('k', id); // applied while the snapshot is under way
    const entries = h.core.snapshotChunk(10).map((e) => JSON.parse(e) as [string, PaceState, number | null]);
    h.core.endSnapshot();
    expect(entries.map(([, s]) => s.idOrder)).toEqual([['a', 'b']]);
    await store.log(0).writeSnapshot(lsn, Buffer.from(JSON.stringify({ lsn, keys: entries })));
    store = store.crash(); // the snapshot, then the two records after it
    ({ h, send } = await paceHost(store, clock, 1_000));
    expect(h.core.state(coordinatorKey('p', 'k'))!.idOrder).toEqual(['a', 'b', 'c', 'constructor']);
    expect(await send('k', 'constructor')).toMatchObject({ duplicate: true });
    expect(await send('k', 'd')).toMatchObject({ duplicate: false });
  });

  it('forgets each ID dedup after it arrived, even on a key that never goes quiet', () => {
    const { c, apply } = paceCore(new Map([['p', EACH]]));
    const key = coordinatorKey('p', 'hot');
    // One event a second, each with a new ID, for 100 s: the key is never quiet for dedup (10 s).
    for (let t = 0; t < 100; t++) apply({ key, at: t * 1000, type: EVENT, data: { e: t, r: `u${t}`, id: `id-${t}` } });
    const s = c.state(key)!;
    expect(Object.keys(s.ids!).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `id-${90 + i}`).sort());
    // id-90 arrived at 90 s and is forgotten at 100 s: it is new again; id-91 is still remembered.
    expect(apply({ key, at: 100_000, type: EVENT, data: { e: 'again', r: 'x1', id: 'id-90' } })).toEqual({
      kind: 'run',
      runId: 'hot@x1',
      duplicate: false,
    });
    expect(apply({ key, at: 100_000, type: EVENT, data: { e: 'again', r: 'x2', id: 'id-91' } })).toEqual({
      kind: 'run',
      runId: 'hot@u91',
      duplicate: true,
    });
  });

  it('answers duplicates as a model of per-ID expiry does, prototype names included (property)', () => {
    const ids = fc.constantFrom(...PROTO_IDS, 'a', 'b', '\uD800', '\uDC00');
    const step = fc.record({ dt: fc.integer({ min: 0, max: 4_000 }), id: ids });
    let duplicates = 0;
    let expired = 0;
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 200, size: 'max' }), (steps) => {
        const { apply } = paceCore(new Map([['p', EACH]]));
        const key = coordinatorKey('p', 'k');
        const model = new Map<string, { runId: string; until: number }>();
        let at = 0;
        steps.forEach(({ dt, id }, n) => {
          at += dt;
          const known = model.get(id);
          const reply = apply({ key, at, type: EVENT, data: { e: n, r: `u${n}`, id } });
          if (known !== undefined && at < known.until) {
            duplicates++;
            expect(reply).toEqual({ kind: 'run', runId: known.runId, duplicate: true });
          } else {
            if (known !== undefined) expired++;
            expect(reply).toEqual({ kind: 'run', runId: `k@u${n}`, duplicate: false });
            model.set(id, { runId: `k@u${n}`, until: at + EACH.dedupMs });
          }
        });
      }),
      { numRuns: 200 },
    );
    // The cases reached what the name claims: duplicates answered, and IDs remembered again after expiring.
    expect(duplicates).toBeGreaterThan(1_000);
    expect(expired).toBeGreaterThan(100);
  });
});
