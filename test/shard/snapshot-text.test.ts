import { describe, expect, it } from 'vitest';
import { ManualClock, memoryStore } from '../../src/index.js';
import { TIMER, type Rules } from '../../src/shard/rules.js';
import { SNAPSHOT_CLOSE, readSnapshotText, snapshotLines, snapshotOpening } from '../../src/shard/snapshot-text.js';
import { ShardHost } from '../../src/pace-stage/shard-host.js';

type Entry = readonly [string, unknown, number | null];

/** A snapshot's text as ShardHost writes it: entries in chunks, a line each. */
function written(lsn: number, at: number | undefined, chunks: readonly (readonly Entry[])[]): string {
  let text = snapshotOpening(lsn, at);
  chunks.forEach(
    (chunk, i) =>
      (text += snapshotLines(
        chunk.map((e) => JSON.stringify(e)),
        i === 0,
      )),
  );
  return text + SNAPSHOT_CLOSE;
}

const read = (text: string) => {
  const s = readSnapshotText(text);
  return { lsn: s.lsn, at: s.at, keys: [...s.keys] };
};

const entries: Entry[] = [
  ['p\u0000customer-1', { v: 1, w: { id: 'r1', events: [{ n: 1 }], size: 1 } }, 1_800_000_000_000],
  ['with "quotes", commas, ] and [', { s: 'a\nb, "c"] ,[', nested: [[1, 2], { x: null }] }, null],
  ['ünïcode ✓', 'a string state', 12.5],
  ['', [1, 2, 3], -1],
];

describe('snapshot text', () => {
  it('is one JSON document, an entry a line, that any JSON reader reads whole', () => {
    const text = written(9, 1_000, [entries.slice(0, 2), entries.slice(2)]);
    expect(text.split('\n')).toHaveLength(entries.length + 2);
    expect(JSON.parse(text)).toEqual({ lsn: 9, at: 1_000, keys: entries });
  });

  it('reads each entry with its state text as the snapshot holds it', () => {
    const { lsn, at, keys } = read(written(9, 1_000, [entries.slice(0, 1), entries.slice(1)]));
    expect([lsn, at]).toEqual([9, 1_000]);
    expect(keys.map((e) => e.slice(0, 3))).toEqual(entries);
    expect(keys.map((e) => e[3])).toEqual(entries.map((e) => JSON.stringify(e[1])));
  });

  it('reads a snapshot of no keys, and one without a time', () => {
    expect(read(written(3, undefined, []))).toEqual({ lsn: 3, at: undefined, keys: [] });
    expect(written(3, undefined, [])).toBe('{"lsn":3,"keys":[\n]}');
  });

  it('reads a snapshot written on one line, as earlier versions wrote them, whole (no state text)', () => {
    const old = `{"lsn":9,"at":1000,"keys":[${entries.map((e) => JSON.stringify(e)).join(',')}]}`;
    expect(read(old)).toEqual({ lsn: 9, at: 1_000, keys: entries });
    expect(read('{"lsn":2,"keys":[]}')).toEqual({ lsn: 2, at: undefined, keys: [] });
  });

  it('gives no state text for an entry whose key is not written as JSON.stringify writes it', () => {
    const text = `{"lsn":1,"keys":[\n[ "k" , {"a":1} , null ],\n["\\u006b2",{"b":2},5]\n]}`;
    const { keys } = read(text);
    expect(keys).toEqual([
      ['k', { a: 1 }, null],
      ['k2', { b: 2 }, 5],
    ]);
  });

  it.each([
    ['cut short', '{"lsn":1,"keys":[\n["a",1,null],\n["b",2,null]', /cut short/],
    ['a comma before the closing', '{"lsn":1,"keys":[\n["a",1,null],\n]}', /ends with a comma/],
    ['no comma between entries', '{"lsn":1,"keys":[\n["a",1,null]\n["b",2,null]\n]}', /without a comma/],
    ['text after the closing', '{"lsn":1,"keys":[\n["a",1,null]\n]}\n{}', /after the closing/],
    ['a line that is not an entry', '{"lsn":1,"keys":[\n["a",1]\n]}', /not an entry/],
    ['a line that is not JSON', '{"lsn":1,"keys":[\n["a",1,nul]\n]}', SyntaxError],
  ])('refuses a snapshot with %s', (_, text, error) => {
    expect(() => read(text)).toThrow(error);
  });

  it('restores a host from a snapshot of either layout, parked keys reading back as they were', async () => {
    type State = { count: number; note?: string };
    const rules: Rules<State, string> = {
      initial: () => ({ count: 0 }),
      apply(state, record, fx) {
        if (record.type === TIMER) return { count: 0 };
        fx.timer(record.at + 100);
        return { ...state, count: state.count + 1 };
      },
      retired: (s) => s.count === 0,
    };
    const keys: Entry[] = Array.from({ length: 50 }, (_, i) => [
      `k${i}`,
      { count: i + 1, note: `n,"${i}"]` },
      2_000 + i,
    ]);
    for (const text of [
      written(50, 1_500, [keys.slice(0, 20), keys.slice(20)]),
      `{"lsn":50,"at":1500,"keys":${JSON.stringify(keys)}}`,
    ]) {
      const store = memoryStore({ shards: 1 });
      const log = store.log(0);
      for (let i = 0; i < 50; i++) await log.append(Buffer.from(JSON.stringify([`k${i}`, 1_000, 'event', null])));
      await log.writeSnapshot(50, Buffer.from(text));
      const host = new ShardHost({ log, rules, clock: new ManualClock(1_500), onOutput: () => {}, maxLoadedKeys: 10 });
      await host.open();
      expect(host.core.parkedCount).toBe(40);
      expect([...host.core.keys()].sort().map((k) => [k, host.core.state(k), host.core.timerOf(k)])).toEqual(
        [...keys].sort((a, b) => (a[0] < b[0] ? -1 : 1)),
      );
      expect(host.core.time).toBe(1_500);
      await host.close();
    }
  });
});
