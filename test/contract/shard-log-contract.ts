/**
 * The shard log contract: what `ShardHost` relies on from any `ShardLog` (src/core/ports.ts). Every store runs
 * this same suite: the memory and file stores in test/contract/shard-log.test.ts, the Kafka store in
 * test/kafka/shard-log.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError, type Alongside, type PublishOptions, type ShardLog, type Store } from '../../src/index.js';
import { MAX_RECORD_BYTES } from '../../src/core/records.js';

/** How a suite gets stores of one shard. */
export interface ShardLogFixture {
  /** A store no one has used, not yet opened. */
  fresh(): Store;
  /**
   * The same store as the next process finds it (not yet opened), once `store` was closed — or, for a store
   * whose writes were broken, left as it is.
   */
  again(store: Store): Store;
  /** Lengths worth trying besides the suite's own: where this store splits a record (its limits, ±1). */
  readonly sizes?: readonly number[];
  /**
   * Makes the log's writes fail from now on (a disk that fails, an owner fenced). Absent where nothing can
   * fail (in memory): the suite skips what needs it.
   */
  breakWrites?(store: Store): Promise<void>;
  /** Per-test timeout, in milliseconds, for stores behind a network. @default vitest's */
  readonly timeoutMs?: number;
  /** For a store that publishes a record's messages in its commit (`Store.publishes`). */
  readonly publishing?: {
    /** A topic no one has used, of one partition, made. */
    topic(): Promise<string>;
    /** What a reader that reads committed finds in `topic`, in order, the values parsed. */
    read(topic: string): Promise<unknown[]>;
    /** A message the broker refuses for good. */
    readonly refused: { readonly value: unknown; readonly options?: PublishOptions };
  };
}

const bytes = (text: string): Buffer => Buffer.from(text);
/** A record of `size` bytes that tells itself apart from one of another length, or with its parts swapped. */
const filled = (size: number): Buffer => {
  const b = Buffer.alloc(size, size % 251);
  for (let i = 0; i + 4 <= size; i += 65_536) b.writeUInt32LE((i ^ size) >>> 0, i);
  return b;
};

async function replayed(log: ShardLog, from = 1): Promise<[number, Buffer][]> {
  const out: [number, Buffer][] = [];
  await log.replay(from, (lsn, record) => out.push([lsn, Buffer.from(record)]));
  return out;
}
const texts = async (log: ShardLog, from = 1): Promise<[number, string][]> =>
  (await replayed(log, from)).map(([lsn, r]) => [lsn, r.toString()]);

/** Appends `records` in one turn (they may share one write); resolves once all are durable. */
const appendAll = (log: ShardLog, records: string[]): Promise<number[]> =>
  Promise.all(records.map((r) => log.append(bytes(r))));

export function shardLogContract(name: string, fixture: ShardLogFixture): void {
  describe(`shard log contract: ${name}`, { timeout: fixture.timeoutMs }, () => {
    const open: Store[] = [];
    afterEach(async () => {
      await Promise.allSettled(open.splice(0).map((s) => s.close()));
    });
    const opened = async (store: Store): Promise<Store> => {
      await store.open();
      open.push(store);
      return store;
    };
    /** Closes `store`, and opens it again as the next process would. */
    const reopen = async (store: Store): Promise<Store> => {
      open.splice(open.indexOf(store), 1);
      await store.close();
      return opened(fixture.again(store));
    };

    it('gives LSNs from 1 in call order, and resolves each append once its record is durable, in LSN order', async () => {
      const log = (await opened(fixture.fresh())).log(0);
      expect([log.assignedLsn(), log.durableLsn()]).toEqual([0, 0]);
      const resolved: number[] = [];
      const appends = ['a', 'b', 'c'].map((r, i) => {
        const append = log.append(bytes(r));
        expect(log.assignedLsn()).toBe(i + 1); // fixed by the call
        return append.then((lsn) => {
          expect(log.durableLsn()).toBeGreaterThanOrEqual(lsn); // durable by the time it resolves
          resolved.push(lsn);
          return lsn;
        });
      });
      expect(log.durableLsn()).toBeLessThan(3); // nothing is durable in the turn of its call
      expect(await Promise.all(appends)).toEqual([1, 2, 3]);
      expect(resolved).toEqual([1, 2, 3]);
      expect(await log.append(bytes('d'))).toBe(4); // and after a wait, the next
      expect([log.assignedLsn(), log.durableLsn()]).toEqual([4, 4]);
    });

    it('replays from any LSN, in LSN order', async () => {
      const log = (await opened(fixture.fresh())).log(0);
      for (let i = 0; i < 4; i++) await appendAll(log, [`r${3 * i + 1}`, `r${3 * i + 2}`, `r${3 * i + 3}`]);
      const all = Array.from({ length: 12 }, (_, i): [number, string] => [i + 1, `r${i + 1}`]);
      expect(await texts(log)).toEqual(all);
      expect(await texts(log, 0)).toEqual(all);
      expect(await texts(log, 7)).toEqual(all.slice(6));
      expect(await texts(log, 12)).toEqual(all.slice(11));
      expect(await texts(log, 13)).toEqual([]);
    });

    it('keeps the durable records across a reopen, and goes on at the next LSN', async () => {
      const store = await opened(fixture.fresh());
      await appendAll(store.log(0), ['a', 'b', 'c']);
      const again = await reopen(store);
      const log = again.log(0);
      expect([log.assignedLsn(), log.durableLsn()]).toEqual([3, 3]);
      expect(await texts(log)).toEqual([
        [1, 'a'],
        [2, 'b'],
        [3, 'c'],
      ]);
      expect(await log.append(bytes('d'))).toBe(4);
      expect(await texts(log, 3)).toEqual([
        [3, 'c'],
        [4, 'd'],
      ]);
    });

    it('replaces the snapshot atomically, and replays from its LSN + 1 after it, across a reopen', async () => {
      const store = await opened(fixture.fresh());
      const log = store.log(0);
      expect(await log.readSnapshot()).toBeUndefined();
      await appendAll(
        log,
        Array.from({ length: 20 }, (_, i) => `r${i + 1}`),
      );
      await log.writeSnapshot(10, bytes('state@10'));
      const first = await log.readSnapshot();
      expect({ lsn: first!.lsn, state: Buffer.from(first!.state).toString() }).toEqual({ lsn: 10, state: 'state@10' });
      await log.writeSnapshot(15, bytes('state@15'));
      await expect(log.writeSnapshot(21, bytes('too soon'))).rejects.toThrow(/not durable/);
      const again = await reopen(store);
      const snap = await again.log(0).readSnapshot();
      expect({ lsn: snap!.lsn, state: Buffer.from(snap!.state).toString() }).toEqual({ lsn: 15, state: 'state@15' });
      expect(await texts(again.log(0), 16)).toEqual([
        [16, 'r16'],
        [17, 'r17'],
        [18, 'r18'],
        [19, 'r19'],
        [20, 'r20'],
      ]);
      expect(again.log(0).durableLsn()).toBe(20);
      expect(await again.log(0).append(bytes('r21'))).toBe(21);
      await again.log(0).writeSnapshot(21, Buffer.alloc(0)); // an empty state is a state
      const last = await reopen(again);
      const empty = await last.log(0).readSnapshot();
      expect({ lsn: empty!.lsn, length: empty!.state.length }).toEqual({ lsn: 21, length: 0 });
      expect(await texts(last.log(0), 22)).toEqual([]);
      expect(await last.log(0).append(bytes('r22'))).toBe(22);
    });

    it('keeps records of every length up to MAX_RECORD_BYTES, empty ones too', async () => {
      const sizes = [
        ...new Set([0, 1, 0, 4095, 65_536, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, ...(fixture.sizes ?? [])]),
        MAX_RECORD_BYTES,
      ].filter((n) => n >= 0 && n <= MAX_RECORD_BYTES);
      const store = await opened(fixture.fresh());
      const lsns = await Promise.all([
        ...sizes.map((n) => store.log(0).append(filled(n))),
        store.log(0).append(Buffer.alloc(0)),
      ]);
      expect(lsns).toEqual(Array.from({ length: sizes.length + 1 }, (_, i) => i + 1));
      const again = await reopen(store);
      const read = await replayed(again.log(0));
      expect(read.map(([lsn, r]) => [lsn, r.length])).toEqual([...sizes, 0].map((n, i) => [i + 1, n]));
      for (const [lsn, r] of read.slice(0, -1))
        expect(r.equals(filled(sizes[lsn - 1]!)), `record of ${r.length} bytes`).toBe(true);
    });

    it('refuses a record longer than MAX_RECORD_BYTES with SEND_INVALID before giving it an LSN', async () => {
      const log = (await opened(fixture.fresh())).log(0);
      await log.append(bytes('a'));
      let refused: unknown;
      try {
        void log.append(Buffer.alloc(MAX_RECORD_BYTES + 1));
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(SluiceError);
      expect(refused).toMatchObject({
        code: 'SEND_INVALID',
        message: expect.stringMatching(/at most .*67108864.* got 67108865/),
      });
      expect(log.assignedLsn()).toBe(1);
      expect(await log.append(bytes('b'))).toBe(2); // no gap
    });

    it.skipIf(!fixture.breakWrites)(
      'refuses every append after a failed one, and claims none of them durable, then or after a reopen',
      async () => {
        const store = await opened(fixture.fresh());
        const log = store.log(0);
        await appendAll(log, ['a', 'b']);
        await fixture.breakWrites!(store);
        const failed = log.append(bytes('c'));
        await expect(failed).rejects.toBeInstanceOf(SluiceError);
        expect(log.durableLsn()).toBe(2);
        let later: unknown;
        try {
          await log.append(bytes('d'));
        } catch (error) {
          later = error;
        }
        expect(later).toBeInstanceOf(SluiceError); // refused (thrown or rejected)
        expect(log.durableLsn()).toBe(2);
        open.splice(open.indexOf(store), 1);
        await store.close().catch(() => undefined);
        const again = await opened(fixture.again(store));
        const read = await texts(again.log(0));
        // What resolved is there; an append that failed may be there or not (as a prefix); a refused one is not.
        expect(read.slice(0, 2)).toEqual([
          [1, 'a'],
          [2, 'b'],
        ]);
        expect([[], [[3, 'c']]]).toContainEqual(read.slice(2));
      },
    );

    const publishing = fixture.publishing;
    /** Messages to `topic` beside a record, and the errors it was refused with. */
    const alongside = (topic: string, values: unknown[], options?: PublishOptions) => {
      const refused: SluiceError[] = [];
      const messages = values.map((value) => ({ topic, value, options }));
      return { messages, refused: (e: SluiceError) => void refused.push(e), errors: refused } satisfies Alongside & {
        errors: SluiceError[];
      };
    };

    it.skipIf(!publishing)("publishes a record's messages in its commit, in the records' order", async () => {
      const store = await opened(fixture.fresh());
      expect(store.publishes).toBe(true);
      const log = store.log(0);
      const topic = await publishing!.topic();
      const [one, three] = [alongside(topic, [{ n: 1 }, { n: 2 }]), alongside(topic, [{ n: 3 }])];
      await Promise.all([log.append(bytes('a'), one), log.append(bytes('b')), log.append(bytes('c'), three)]);
      expect(await publishing!.read(topic)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      expect([one.errors, three.errors]).toEqual([[], []]);
      expect(await texts(log)).toEqual([
        [1, 'a'],
        [2, 'b'],
        [3, 'c'],
      ]);
    });

    it.skipIf(!publishing)(
      'gives back messages the broker refuses, and makes their record durable without them; the others go',
      async () => {
        const store = await opened(fixture.fresh());
        const log = store.log(0);
        const topic = await publishing!.topic();
        const { value, options } = publishing!.refused;
        const good = alongside(topic, [{ n: 1 }]);
        const bad = alongside(topic, [{ n: 2 }, value], options);
        const after = alongside(topic, [{ n: 3 }]);
        const lsns = await Promise.all([
          log.append(bytes('a'), good),
          log.append(bytes('b'), bad),
          log.append(bytes('c'), after),
        ]);
        expect(lsns).toEqual([1, 2, 3]);
        expect(bad.errors).toHaveLength(1);
        expect(bad.errors[0]).toBeInstanceOf(SluiceError);
        expect([good.errors, after.errors]).toEqual([[], []]);
        expect(await publishing!.read(topic)).toEqual([{ n: 1 }, { n: 3 }]);
        expect((await texts(log)).map(([, r]) => r)).toEqual(['a', 'b', 'c']);
        expect(await log.append(bytes('d'), alongside(topic, [{ n: 4 }]))).toBe(4); // the log goes on
        expect(await publishing!.read(topic)).toEqual([{ n: 1 }, { n: 3 }, { n: 4 }]);
      },
    );
  });
}
