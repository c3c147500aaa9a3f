/**
 * The pace codec: the compact form of events and states in the journal and snapshots, versioned. Version 1
 * is the form without a mark (and the older one with one `idsUntil`), and what this code writes: states
 * with `v: 1`, event records unmarked; any other version is refused, naming it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/index.js';
import { decodeEvent, decodeState, encodeEvent, encodeState, PACE_CODEC_VERSION } from '../../src/pace/codec.js';
import { QUIET, type PaceState } from '../../src/pace/state.js';

const run = { runId: 'k@u1', events: [{ n: 1 }], size: 1, order: 0 };

describe('pace codec', () => {
  it('gives back every stage and part of a state, in the compact form with its version', () => {
    const states: PaceState[] = [
      QUIET,
      { ...QUIET, stage: 'gathering', window: { ...run, order: 5, openedAt: 1, closesAt: 2 } },
      {
        ...QUIET,
        waiting: [{ ...run, order: -2 }, run],
        running: [{ ...run, startedAt: 3 }],
        history: [3, 4],
        ids: Object.assign(Object.create(null) as Record<string, string>, { a: 'k@u1', b: '' }),
        idOrder: ['a', 'b'],
        idUntil: [10, 11],
        idHead: 0,
        seen: Object.assign(Object.create(null) as Record<string, number>, { 'orders/0': 7 }),
        seenUntil: 12,
      },
    ];
    for (const s of states) {
      const json = JSON.parse(JSON.stringify(encodeState(s))) as unknown;
      expect(json).toMatchObject({ v: PACE_CODEC_VERSION });
      expect(decodeState(json)).toEqual(s);
    }
    expect(encodeState(states[1]!)).toEqual({
      v: 1,
      w: { id: 'k@u1', events: [{ n: 1 }], size: 1, o: 5, first: 1, due: 2 },
    });
    // The text, field order included, is what snapshots and parked keys hold.
    expect(JSON.stringify(encodeState({ ...states[2]!, running: [{ ...run, order: 4, startedAt: 3 }] }))).toBe(
      '{"v":1,"q":[{"id":"k@u1","events":[{"n":1}],"size":1,"o":-2},{"id":"k@u1","events":[{"n":1}],"size":1}],' +
        '"runs":[{"id":"k@u1","events":[{"n":1}],"size":1,"o":4,"at":3}],"starts":[3,4],"ids":{"a":"k@u1","b":""},' +
        '"idOrder":["a","b"],"idUntil":[10,11],"idHead":0,"seen":{"orders/0":7},"seenUntil":12}',
    );
  });

  it('reads the snapshot a store written before the version mark holds, and writes it back the same but for the mark', () => {
    const text = readFileSync(
      fileURLToPath(new URL('../fixtures/pace-store-v1/store/shard-0/snapshot', import.meta.url)),
      'latin1',
    );
    const { keys } = JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)) as {
      keys: [string, Record<string, unknown>, number | null][];
    };
    expect(keys.length).toBeGreaterThan(4);
    for (const [, json] of keys) expect(encodeState(decodeState(json))).toEqual({ ...json, v: 1 });
  });

  it('reads the earlier state that forgot every ID at once (idsUntil) as one with each ID forgotten then', () => {
    const s = decodeState({ ids: { a: 'k@u1', b: '' }, seen: { 'orders/0': 3 }, idsUntil: 50 });
    expect(s).toEqual({
      ...QUIET,
      ids: { a: 'k@u1', b: '' },
      idOrder: ['a', 'b'],
      idUntil: [50, 50],
      idHead: 0,
      seen: { 'orders/0': 3 },
      seenUntil: 50,
    });
    expect(Object.getPrototypeOf(s.ids)).toBeNull();
  });

  it('gives back an event, and reads one journaled before the version mark', () => {
    const events = [
      { event: { n: 1 }, runUuid: 'u1', order: 0 },
      { event: 'x', runUuid: 'u2', order: 3, eventId: 'id-1' },
      { event: null, runUuid: 'u3', order: -1, source: { partition: 'orders/2', offset: 9 } },
    ];
    for (const e of events) expect(decodeEvent(JSON.parse(JSON.stringify(encodeEvent(e))))).toEqual(e);
    expect(encodeEvent(events[1]!)).toEqual({ e: 'x', r: 'u2', o: 3, id: 'id-1' }); // version 1: unmarked
    expect(decodeEvent({ e: 2, r: '', id: 'x' })).toEqual({ event: 2, runUuid: '', order: 0, eventId: 'x' });
  });

  it('refuses a version it does not know with STORE_CORRUPT, naming it', () => {
    for (const decode of [() => decodeState({ v: 2 }), () => decodeEvent({ v: 2, e: 1, r: 'u' })]) {
      expect(decode).toThrow(SluiceError);
      expect(decode).toThrow(/codec version 2, and this version of sluice reads version 1 only/);
      try {
        decode();
      } catch (error) {
        expect((error as SluiceError).code).toBe('STORE_CORRUPT');
      }
    }
  });
});
