import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { hashBytes } from '../../src/shard/parked-keys.js';
import { ParkedTable } from '../../src/shard/parked-table.js';

describe('ParkedTable', () => {
  // First: a table whose keys all hash alike is slow, not wrong; this says so at once.
  it('hashes every byte of a key, from its offset: keys that differ anywhere hash apart', () => {
    const keys = Array.from({ length: 2_000 }, (_, i) => `key-${i}`);
    expect(new Set(keys.map((k) => hashBytes(Buffer.from(k), k.length))).size).toBe(keys.length);
    const buf = Buffer.from('xxab');
    expect(hashBytes(buf, 2, 2)).toBe(hashBytes(Buffer.from('ab'), 2));
    expect(hashBytes(buf, 2, 2)).not.toBe(hashBytes(buf, 2, 1));
    expect(hashBytes(Buffer.alloc(0), 0)).toBe(0x811c9dc5); // FNV-1a's offset basis
  });

  it('parks, updates and unparks keys, unicode included', () => {
    const t = new ParkedTable();
    t.set('a', 5, 100);
    t.set('ключ-🔑', 7, Number.NaN);
    t.set('a', 6, 90);
    expect(t.size).toBe(2);
    expect(t.ref('a')).toBe(6);
    expect(t.timerAt('a')).toBe(90);
    expect(t.timerAt('ключ-🔑')).toBeNaN();
    expect(t.ref('b')).toBeUndefined();
    expect(t.delete('a')).toBe(true);
    expect(t.delete('a')).toBe(false);
    expect(t.ref('a')).toBeUndefined();
    expect(t.size).toBe(1);
  });

  it('has no earliest timer when none is set, keys parked without one included', () => {
    const t = new ParkedTable();
    expect(t.earliest()).toBeUndefined();
    for (let i = 0; i < 3_000; i++) t.set(`k${i}`, i, Number.NaN); // three chunks and more, no timer
    expect(t.earliest()).toBeUndefined();
    t.set('k2999', 1, 70);
    expect(t.earliest()).toBe(70);
    t.set('k2999', 1, Number.NaN); // cleared: the chunk's bound stays 70 until it is looked at
    expect(t.earliest()).toBeUndefined();
    const visited: string[] = [];
    t.sweep(Number.POSITIVE_INFINITY, (key) => visited.push(key));
    expect(visited).toEqual([]);
  });

  it('takes references from 0 to 2^48 - 1 and refuses any other', () => {
    const t = new ParkedTable();
    t.set('low', 0, 1);
    t.set('high', 2 ** 48 - 1, 1);
    expect(t.ref('low')).toBe(0);
    expect(t.ref('high')).toBe(2 ** 48 - 1);
    for (const bad of [-1, 2 ** 48, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => new ParkedTable().set('k', bad, 1)).toThrow(
        new RangeError(`ParkedTable: a reference must be an integer from 0 to 2^48 - 1, got ${bad}`),
      );
  });

  it('refuses a reference out of range before anything changes: no key parked, none updated', () => {
    const t = new ParkedTable();
    t.set('kept', 1, 10);
    for (const bad of [-1, 2 ** 48, 1.5, Number.NaN]) {
      expect(() => t.set('new', bad, 5)).toThrow(RangeError);
      expect(() => t.set('kept', bad, 5)).toThrow(RangeError);
      expect(t.size).toBe(1);
      expect([...t.keys()]).toEqual(['kept']);
      expect(t.entry('new')).toBeUndefined();
      expect(t.entry('kept')).toEqual({ ref: 1, timer: 10 });
      expect(t.earliest()).toBe(10);
    }
  });

  it('counts what it holds in bytes: 21 a slot, 8 a chunk of 1,024 slots, and its key arena', () => {
    const t = new ParkedTable();
    expect(t.bytes()).toBe(1_024 * 21 + 8 + 16 * 1_024); // a fresh table's arena: 16 bytes a slot
    for (let i = 0; i < 1_000; i++) t.set(`k${i}`, i, i); // past 768: 2,048 slots
    expect(t.bytes()).toBeGreaterThanOrEqual(2_048 * 21 + 2 * 8 + 1_000 * 2);
    expect(t.bytes()).toBeLessThan(2_048 * 21 + 2 * 8 + 32 * 1_024);
  });

  it('gives back every key exactly as it was parked, lone surrogates included (UTF-8 would make them all U+FFFD)', () => {
    const keys = [
      '\uD800',
      '\uDC00',
      '\uFFFD',
      '\uDBFF\uDFFF',
      'x\uD800',
      'x\uFFFD',
      'x\uDFFFy',
      '',
      'plain',
      'ключ-🔑',
    ];
    const t = new ParkedTable();
    keys.forEach((k, i) => t.set(k, i, 100 + i));
    expect(t.size).toBe(keys.length);
    keys.forEach((k, i) => expect(t.entry(k)).toEqual({ ref: i, timer: 100 + i }));
    expect([...t.keys()].sort()).toEqual([...keys].sort());
    const frozen = t.frozenKeys();
    expect(keys.every((k) => frozen.unread(k))).toBe(true);
    expect(frozen.unread('\uDFFF')).toBe(false);
    expect(frozen.next(100).sort()).toEqual([...keys].sort());
    const due: string[] = [];
    t.sweep(Number.POSITIVE_INFINITY, (k) => due.push(k));
    expect(due.sort()).toEqual([...keys].sort());
    expect(t.delete('\uD800')).toBe(true);
    expect(t.entry('\uDC00')).toEqual({ ref: 1, timer: 101 });
    expect(t.entry('\uFFFD')).toEqual({ ref: 2, timer: 102 });
  });

  it('gives back keys of every length around the sizes of its scratch buffer, in one to three bytes a character or as UTF-16', () => {
    // Lengths around 256 bytes (the key encoder's first buffer) and around the sizes it grows to.
    const lengths = [...Array.from({ length: 40 }, (_, i) => 70 + i), ...Array.from({ length: 20 }, (_, i) => 120 + i)];
    const keys = lengths.flatMap((n) => [
      'a'.repeat(n),
      'é'.repeat(n),
      '€'.repeat(n),
      `${'b'.repeat(n)}\uD800`, // a lone surrogate: kept as UTF-16LE, 2 bytes a unit
      `${'€'.repeat(n)}\uDC00`,
    ]);
    const t = new ParkedTable();
    keys.forEach((k, i) => t.set(k, i, i));
    expect(t.size).toBe(keys.length);
    keys.forEach((k, i) => expect(t.entry(k)).toEqual({ ref: i, timer: i }));
    expect(t.entry(`${'a'.repeat(99)}b`)).toBeUndefined();
    expect([...t.keys()].sort()).toEqual([...keys].sort());
  });

  it('gives back a first key that outgrows the scratch buffer by its header alone', () => {
    // 127 UTF-16 units kept as UTF-16LE: 254 bytes, and its 4-byte header makes 258, past the first 256.
    const key = `${'w'.repeat(126)}\uD800`;
    const t = new ParkedTable();
    t.set(key, 1, 2);
    expect([...t.keys()]).toEqual([key]);
    expect(t.entry(key)).toEqual({ ref: 1, timer: 2 });
  });

  it('tells a key from one it begins with, however their hashes fall', () => {
    const t = new ParkedTable();
    const keys = Array.from({ length: 700 }, (_, i) => `p${i}`);
    for (const k of keys) t.set(`${k}-longer`, 1, 1);
    for (const k of keys) expect(t.entry(k)).toBeUndefined();
  });

  it('takes keys of 65,535 bytes and more (a coordinator key is the subscriber, a separator and the user key), through resizes and compactions', () => {
    const long = [65_534, 65_535, 65_536, 200_000].map((n) => 'k'.repeat(n));
    const keys = [...long, ...long.map((k) => `${k}\uD800`), 'short', '\uDC00'];
    const t = new ParkedTable();
    keys.forEach((k, i) => t.set(k, i, i));
    for (let i = 0; i < 3_000; i++) t.set(`filler-${i}`, i, i); // grows the table: a rehash of every entry
    for (let round = 0; round < 3; round++)
      for (const k of keys) {
        // garbage: compactions
        t.delete(k);
        t.set(k, round, round);
      }
    expect(t.size).toBe(keys.length + 3_000);
    keys.forEach((k) => expect(t.entry(k)).toEqual({ ref: 2, timer: 2 }));
    expect(t.ref('k'.repeat(65_537))).toBeUndefined();
    const back = new Set(t.keys());
    expect(keys.every((k) => back.has(k))).toBe(true);
    const frozen = t.frozenKeys();
    expect(keys.every((k) => frozen.unread(k))).toBe(true);
  });

  it('does not grow under churn: keys parked and unparked over and over leave no garbage behind', () => {
    const t = new ParkedTable();
    const keys = Array.from({ length: 500 }, (_, i) => `customer-${i}-${'x'.repeat(i % 40)}`);
    let most = 0;
    for (let round = 0; round < 50; round++) {
      for (const k of keys) t.set(k, round, round);
      most = Math.max(most, t.bytes());
      for (const k of keys) t.delete(k);
    }
    expect(t.size).toBe(0);
    // 1,024 slots of 23 bytes, and a key arena of at most twice the 64 KiB of garbage it tolerates, plus the live keys
    // (20 KB). Unparked keys' bytes once stayed in the arena for good: 16 KB a round, 800 KB here.
    expect(most).toBeLessThan(1_024 * 23 + 2 * (64 * 1024 + 20_000) + 1_024);
    for (const k of keys) expect(t.ref(k)).toBeUndefined();
    t.set(keys[7]!, 42, 43);
    expect(t.entry(keys[7]!)).toEqual({ ref: 42, timer: 43 });
  });

  it('keeps keys a frozen copy has not read yet readable while the arena is compacted', () => {
    const t = new ParkedTable();
    const keys = Array.from({ length: 300 }, (_, i) => `k${i}-${'y'.repeat(200)}`);
    for (const k of keys) t.set(k, 1, 1);
    const frozen = t.frozenKeys();
    for (let round = 0; round < 20; round++) {
      for (const k of keys.slice(1)) t.delete(k);
      for (const k of keys.slice(1)) t.set(k, round, round);
    }
    expect(frozen.next(1_000).sort()).toEqual([...keys].sort());
  });

  // What a table costs, exactly: `bytes()` is 21 bytes a slot, 8 a chunk of 1,024 slots, and the key arena.
  const costOf = (slots: number, arena: number) => slots * 21 + (slots / 1_024) * 8 + arena;
  const keyOf100 = (i: number) => String(i).padStart(4, '0').padEnd(100, 'x'); // 100 bytes
  const keyOf1k = (i: number) => String(i).padStart(4, '0').padEnd(1_024, 'x'); // 1,024 bytes

  it('grows to twice its slots when the key after three quarters of them comes, not before', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 768; i++) t.set(`k${i}`, i, i); // 768 of 1,024 slots: three quarters, not more
    expect(t.bytes()).toBe(costOf(1_024, 16 * 1_024)); // a fresh table's arena: 16 bytes a slot
    t.set('k768', 768, 768);
    expect(t.bytes()).toBe(costOf(2_048, 16 * 1_024)); // the keys' 3 KB fit in the 16 KiB a rehash starts with
    for (let i = 0; i <= 768; i++) expect(t.entry(`k${i}`)).toEqual({ ref: i, timer: i });
  });

  it('grows its key arena by doubling, and a rehash starts it at the keys it holds', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 768; i++) t.set(keyOf100(i), i, i); // 76,800 bytes: 16 KiB doubled three times
    expect(t.bytes()).toBe(costOf(1_024, 128 * 1_024));
    t.set(keyOf100(768), 768, 768); // a rehash into 76,800 bytes, then doubled for the new key
    expect(t.bytes()).toBe(costOf(2_048, 2 * 76_800));
    for (let i = 0; i <= 768; i++) expect(t.ref(keyOf100(i))).toBe(i);
  });

  it('rehashes in place when most taken slots are tombstones, and grows when half its load is live keys', () => {
    for (const [deleted, slots] of [
      [385, 1_024], // 383 live keys: a table of the same size holds them at under three eighths
      [384, 2_048], // 384 live keys: twice the slots
    ] as const) {
      const t = new ParkedTable();
      for (let i = 0; i < 768; i++) t.set(`k${i}`, i, i);
      for (let i = 0; i < deleted; i++) t.delete(`k${i}`);
      t.set('new', 1, 1); // the 769th taken slot: a rehash
      expect(t.bytes(), `${deleted} deleted`).toBe(costOf(slots, 16 * 1_024));
      expect(t.size).toBe(768 - deleted + 1);
      for (let i = 0; i < 768; i++) expect(t.ref(`k${i}`)).toBe(i < deleted ? undefined : i);
    }
  });

  it('compacts its key arena once the unparked keys bytes pass 64 KiB and outweigh the parked ones', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 100; i++) t.set(keyOf1k(i), i, i); // 102,400 bytes: an arena of 128 KiB
    expect(t.bytes()).toBe(costOf(1_024, 128 * 1_024));
    for (let i = 0; i < 64; i++) t.delete(keyOf1k(i)); // 64 KiB unparked: not past it
    t.set('a', 1, 1);
    expect(t.bytes()).toBe(costOf(1_024, 128 * 1_024));
    t.delete(keyOf1k(64)); // 65 KiB unparked, 35,841 bytes parked
    t.set('b', 2, 2); // compacted into twice the parked keys' bytes, before the new key is stored
    expect(t.bytes()).toBe(costOf(1_024, 2 * 35_841));
    for (let i = 0; i < 100; i++) expect(t.ref(keyOf1k(i))).toBe(i < 65 ? undefined : i);
    expect(t.entry('a')).toEqual({ ref: 1, timer: 1 });
  });

  it('does not compact its key arena while the unparked keys bytes are no more than the parked ones', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 200; i++) t.set(keyOf1k(i), i, i); // 204,800 bytes: an arena of 256 KiB
    for (let i = 0; i < 100; i++) t.delete(keyOf1k(i)); // as many bytes unparked as parked
    t.set('a', 1, 1);
    expect(t.bytes()).toBe(costOf(1_024, 256 * 1_024));
    t.delete(keyOf1k(100)); // 103,424 unparked, 101,377 parked
    t.set('b', 2, 2);
    expect(t.bytes()).toBe(costOf(1_024, 2 * 101_377));
    for (let i = 0; i < 200; i++) expect(t.ref(keyOf1k(i))).toBe(i <= 100 ? undefined : i);
  });

  it('counts a slot taken only once: a key parked again in its tombstone does not bring a rehash nearer', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 700; i++) t.set(`k${i}`, i, i);
    for (let i = 0; i < 100; i++) {
      t.delete(`k${i}`);
      t.set(`k${i}`, i, i); // back in the slot it left
    }
    for (let i = 700; i < 768; i++) t.set(`k${i}`, i, i); // 768 slots taken: no rehash yet
    expect(t.bytes()).toBe(costOf(1_024, 16 * 1_024));
  });

  it('grows its key arena when a key does not fit, not when it fills it to the byte', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 16; i++) t.set(keyOf1k(i), i, i); // 16 KiB: the fresh arena, full
    expect(t.bytes()).toBe(costOf(1_024, 16 * 1_024));
    t.set(keyOf1k(16), 16, 16);
    expect(t.bytes()).toBe(costOf(1_024, 32 * 1_024));
  });

  it('compacts its key arena into 16 KiB at least', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 70; i++) t.set(keyOf1k(i), i, i);
    for (let i = 0; i < 68; i++) t.delete(keyOf1k(i)); // 2 KiB parked
    t.set('c', 1, 1);
    expect(t.bytes()).toBe(costOf(1_024, 16 * 1_024));
    expect([...t.keys()].sort()).toEqual([keyOf1k(68), keyOf1k(69), 'c'].sort());
  });

  it('says a key is unread until a frozen copy hands it out, the very next one included', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 700; i++) t.set(`k${i}`, i, i); // runs of neighbouring slots
    const order = [...t.keys()]; // slot order
    const frozen = t.frozenKeys();
    order.forEach((key, i) => {
      expect(frozen.unread(key)).toBe(true);
      expect(frozen.next(1)).toEqual([key]);
      expect(frozen.unread(key)).toBe(false);
      if (i + 1 < order.length) expect(frozen.unread(order[i + 1]!)).toBe(true);
    });
    expect(frozen.next(5)).toEqual([]);
  });

  it('finds the earliest timer when every chunk bound is loose: a look per chunk, and one more', () => {
    const t = new ParkedTable(2_048); // two chunks; 1,500 keys fill both
    for (let i = 0; i < 1_500; i++) t.set(`k${i}`, i, 1);
    for (let i = 0; i < 1_500; i++) t.set(`k${i}`, i, 100 + i); // later timers leave both bounds at 1
    expect(t.earliest()).toBe(100);
    t.set('k0', 0, Number.NaN);
    expect(t.earliest()).toBe(101);
  });

  // Last: a mutant that stalls the table fails one of the small tests above first, instead of hanging this one.
  it('behaves like a Map of keys to (reference, timer) under random operations, through resizes and tombstones (property)', () => {
    // The model: a Map. A sweep hands out exactly the keys whose timer is due (at most `max` of them), and the
    // caller then moves each one it was given — unparks it, or parks it again with a later timer or none — as
    // ShardCore does; `earliest` is the model's earliest timer.
    type Op =
      | { t: 'set'; key: number; ref: number; timer: number | null }
      | { t: 'delete'; key: number }
      | { t: 'sweep'; untilMs: number; max: number; unpark: boolean }
      | { t: 'earliest' }
      | { t: 'get'; key: number }
      | { t: 'freeze' }
      | { t: 'read'; max: number; key: number }
      | { t: 'remap' };
    const timer = fc.option(fc.integer({ min: 0, max: 10_000 }), { freq: 4 });
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 80,
        arbitrary: fc.record({
          t: fc.constant('set' as const),
          key: fc.nat({ max: 3_000 }),
          ref: fc.oneof(fc.nat({ max: 1_000 }), fc.nat({ max: 2 ** 48 - 1 })),
          timer,
        }),
      },
      { weight: 30, arbitrary: fc.record({ t: fc.constant('delete' as const), key: fc.nat({ max: 3_000 }) }) },
      {
        weight: 10,
        arbitrary: fc.record({
          t: fc.constant('sweep' as const),
          untilMs: fc.integer({ min: -1, max: 10_000 }),
          max: fc.integer({ min: 0, max: 40 }),
          unpark: fc.boolean(),
        }),
      },
      { weight: 10, arbitrary: fc.record({ t: fc.constant('earliest' as const) }) },
      { weight: 20, arbitrary: fc.record({ t: fc.constant('get' as const), key: fc.nat({ max: 3_000 }) }) },
      { weight: 1, arbitrary: fc.constant({ t: 'freeze' as const }) },
      {
        weight: 10,
        arbitrary: fc.record({
          t: fc.constant('read' as const),
          max: fc.nat({ max: 100 }),
          key: fc.nat({ max: 3_000 }),
        }),
      },
      { weight: 1, arbitrary: fc.constant({ t: 'remap' as const }) },
    );
    // A frozen copy lists the keys parked when it was taken, whatever the table does meanwhile.
    type Frozen = { keys: ReturnType<ParkedTable['frozenKeys']>; parked: Set<string>; read: Set<string> };
    const unreadOk = (f: Frozen, key: string) =>
      expect(f.keys.unread(key), key).toBe(f.parked.has(key) && !f.read.has(key));
    const resize = vi.spyOn(ParkedTable.prototype as unknown as { resize(capacity: number): void }, 'resize');
    let grown = 0;
    let rehashed = 0;
    let swept = 0;
    let cut = 0;
    let frozenRead = 0;
    try {
      fc.assert(
        fc.property(
          // First keys coming and going, 100 parked at a time (each unparked one leaves a tombstone, which the table
          // rehashes away in place), then keys parked for good (the table grows past its 1,024 slots).
          fc.array(timer, { minLength: 1_500, maxLength: 2_500, size: 'max' }),
          fc.array(timer, { minLength: 700, maxLength: 1_500, size: 'max' }),
          fc.array(op, { minLength: 1, maxLength: 2_000, size: 'max' }),
          (coming, staying, ops) => {
            const t = new ParkedTable(16);
            const model = new Map<string, { ref: number; timer: number }>();
            let frozen: Frozen | undefined;
            resize.mockClear();
            [...coming, ...staying].forEach((at, i) => {
              const key = `key-${i}`;
              t.set(key, i, at ?? Number.NaN);
              model.set(key, { ref: i, timer: at ?? Number.NaN });
              if (i >= 100 && i < coming.length) {
                expect(t.delete(`key-${i - 100}`)).toBe(true);
                model.delete(`key-${i - 100}`);
              }
              if (resize.mock.calls.length > 10) expect(resize.mock.calls.length).toBeLessThanOrEqual(10);
            });
            for (const o of ops) {
              if (o.t === 'set') {
                const key = `key-${o.key}`;
                const entry = { ref: o.ref, timer: o.timer ?? Number.NaN };
                t.set(key, entry.ref, entry.timer);
                model.set(key, entry);
              } else if (o.t === 'delete') {
                expect(t.delete(`key-${o.key}`)).toBe(model.delete(`key-${o.key}`));
              } else if (o.t === 'get') {
                const key = `key-${o.key}`;
                expect(t.entry(key)).toEqual(model.get(key));
                expect(t.timerAt(key)).toEqual(model.get(key)?.timer);
                expect(t.ref(key)).toBe(model.get(key)?.ref);
              } else if (o.t === 'freeze') {
                frozen = { keys: t.frozenKeys(), parked: new Set(model.keys()), read: new Set() };
              } else if (o.t === 'read') {
                if (!frozen) continue;
                const keys = frozen.keys.next(o.max);
                expect(keys.length).toBe(Math.min(o.max, frozen.parked.size - frozen.read.size));
                for (const key of keys) {
                  expect(frozen.parked.has(key) && !frozen.read.has(key), key).toBe(true);
                  frozen.read.add(key);
                  unreadOk(frozen, key);
                }
                unreadOk(frozen, `key-${o.key}`);
                frozenRead += keys.length;
              } else if (o.t === 'remap') {
                // References move (a state arena compacted): each to its mirror image below 2^48.
                const move = (ref: number) => 2 ** 48 - 1 - ref;
                t.remapRefs(move);
                for (const entry of model.values()) entry.ref = move(entry.ref);
              } else if (o.t === 'earliest') {
                const timers = [...model.values()].map((e) => e.timer).filter((at) => !Number.isNaN(at));
                expect(t.earliest()).toBe(timers.length === 0 ? undefined : Math.min(...timers));
              } else {
                const due = [...model].filter(([, e]) => e.timer <= o.untilMs);
                const visited: string[] = [];
                t.sweep(
                  o.untilMs,
                  (key, at) => {
                    expect(at).toBe(model.get(key)?.timer);
                    visited.push(key);
                    if (o.unpark) expect(t.delete(key)).toBe(true);
                  },
                  o.max,
                );
                expect(visited.length).toBe(Math.min(o.max, due.length));
                expect(new Set(visited).size).toBe(visited.length);
                for (const key of visited) {
                  if (o.unpark) model.delete(key);
                  else {
                    // parked again: its timer moved on, or cleared
                    const n = Number(key.slice('key-'.length));
                    const entry = {
                      ref: model.get(key)!.ref,
                      timer: n % 3 === 0 ? Number.NaN : o.untilMs + 1 + (n % 50),
                    };
                    t.set(key, entry.ref, entry.timer);
                    model.set(key, entry);
                  }
                }
                swept += visited.length;
                if (due.length > o.max) cut++;
              }
              if (t.size !== model.size) expect(t.size).toBe(model.size);
              // It rehashes only once three quarters of its slots are taken: a few times a run, not at every insert.
              if (resize.mock.calls.length > 10) expect(resize.mock.calls.length).toBeLessThanOrEqual(10);
            }
            if (frozen) {
              for (const key of frozen.keys.next(Number.POSITIVE_INFINITY)) {
                expect(frozen.read.has(key), key).toBe(false);
                frozen.read.add(key);
              }
              expect(frozen.read).toEqual(frozen.parked);
            }
            const capacities = resize.mock.calls.map(([capacity]) => capacity);
            grown += capacities.filter((c, i) => c > (capacities[i - 1] ?? 1_024)).length;
            rehashed += capacities.filter((c, i) => c === (capacities[i - 1] ?? 1_024)).length;
            for (const [key, entry] of model) expect(t.entry(key)).toEqual(entry);
            expect([...t.keys()].sort()).toEqual([...model.keys()].sort());
            expect(t.frozenKeys().next(Number.POSITIVE_INFINITY).sort()).toEqual([...model.keys()].sort());
            // Every timer still fires: a sweep to the end of time hands out each key with one, once.
            const all: string[] = [];
            t.sweep(Number.POSITIVE_INFINITY, (key) => all.push(key));
            expect(all.sort()).toEqual(
              [...model]
                .filter(([, e]) => !Number.isNaN(e.timer))
                .map(([k]) => k)
                .sort(),
            );
          },
        ),
        { numRuns: 12 },
      );
    } finally {
      resize.mockRestore();
    }
    // The runs reached what the name claims: the table grew, and rehashed its tombstones away in place.
    expect(grown).toBeGreaterThanOrEqual(12); // every run
    expect(rehashed).toBeGreaterThanOrEqual(6);
    expect(swept).toBeGreaterThan(2_000);
    expect(cut).toBeGreaterThan(50); // sweeps stopped at their `max`
    expect(frozenRead).toBeGreaterThan(1_000); // frozen copies read while the table changed
  }, 60_000);
});
