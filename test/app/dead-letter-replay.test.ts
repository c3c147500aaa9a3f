/**
 * Dead letters read and replayed (`app.inspectDeadLetters`, `app.replayDeadLetters`) on the memory broker:
 * a replayed letter runs again on its subscriber, once ever however often it is replayed; ranges, filters
 * and limits pick what goes; what cannot be replayed is told.
 */
import { describe, expect, it } from 'vitest';
import { App, HandlerOutcome, MemoryBroker, REPLAY_HEADER, silentLogger, subscriber } from '../../src/index.js';

interface Order {
  id: number;
}

/** An app whose `orders` subscriber refuses the orders in `refused` (dead letters) and records the rest it handles. */
function app(refused: Set<number>) {
  const broker = new MemoryBroker({ partitions: 2 });
  const handled: { id: number; replayOf?: string }[] = [];
  const a = new App({ name: 'dlq', logger: silentLogger }).withBroker(broker, (b) =>
    b.include(
      subscriber('orders', (o: Order, ctx) => {
        if (refused.has(o.id)) return HandlerOutcome.reject(`order ${o.id} refused`);
        const replayOf = ctx.message.headers[REPLAY_HEADER];
        handled.push(typeof replayOf === 'string' ? { id: o.id, replayOf } : { id: o.id });
        return undefined;
      })
        .name('orders')
        .build(),
    ),
  );
  return { app: a, broker, handled };
}

describe('dead letters', () => {
  it('are listed with where they came from and why, paged, oldest first', async () => {
    const { app: a, broker } = app(new Set([1, 2, 3, 4, 5]));
    await a.start();
    for (let id = 0; id < 8; id++) await broker.publish('orders', { id }, { key: `k${id}` });
    await a.idle();
    const all: string[] = [];
    let after: string | undefined;
    do {
      const page = await a.inspectDeadLetters('orders', { limit: 2, ...(after ? { after } : {}) });
      expect(page.letters.length).toBeLessThanOrEqual(2);
      for (const l of page.letters) {
        expect(l.sourceTopic).toBe('orders');
        expect(l.reason).toMatch(/^order \d refused$/);
        expect(JSON.parse(l.value)).toEqual({ id: Number(l.key!.slice(1)) });
        expect(l.replayed).toBe(false);
        expect(l.stripped).toBe(false);
      }
      all.push(...page.letters.map((l) => l.key!));
      after = page.next;
    } while (after !== undefined);
    expect(all.sort()).toEqual(['k1', 'k2', 'k3', 'k4', 'k5']);
    await a.stop();
  });

  it('replayed, run again on their subscriber, once however often the replay is asked', async () => {
    const refused = new Set([1, 2, 3]);
    const { app: a, broker, handled } = app(refused);
    await a.start();
    for (let id = 0; id < 5; id++) await broker.publish('orders', { id }, { key: `k${id}` });
    await a.idle();
    expect(handled.map((h) => h.id).sort()).toEqual([0, 4]);
    refused.clear(); // fixed: the letters now pass
    const [first, second] = await Promise.all([
      a.replayDeadLetters('orders'),
      a.replayDeadLetters('orders'), // at the same time: one after the other, the second skips all
    ]);
    expect(first).toEqual({ replayed: 3, skipped: 0, unreplayable: 0, scanned: 3 });
    expect(second).toEqual({ replayed: 0, skipped: 3, unreplayable: 0, scanned: 3 });
    await a.idle();
    const again = handled.filter((h) => h.replayOf !== undefined);
    expect(again.map((h) => h.id).sort()).toEqual([1, 2, 3]);
    expect(again.every((h) => /^orders\.dlq\/\d\/\d+$/.test(h.replayOf!))).toBe(true);
    expect((await a.inspectDeadLetters('orders')).letters.every((l) => l.replayed)).toBe(true);
    expect(await a.replayDeadLetters('orders')).toMatchObject({ replayed: 0, skipped: 3 });
    await a.idle();
    expect(handled).toHaveLength(5);
    await a.stop();
  });

  it('replays a range of one partition, what a filter keeps, up to a limit', async () => {
    const refused = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const { app: a, broker, handled } = app(refused);
    await a.start();
    for (let id = 0; id < 10; id++) await broker.publish('orders', { id }, { partition: 0 }); // all in partition 0
    await a.idle();
    refused.clear();
    const idOf = (l: { value: string }): number => (JSON.parse(l.value) as Order).id;
    const letters = (await a.inspectDeadLetters('orders', { partition: 0, limit: 100 })).letters;
    expect(letters.length).toBeGreaterThanOrEqual(4);
    const range = letters.slice(1, 4);
    expect(
      await a.replayDeadLetters('orders', { partition: 0, fromOffset: range[0]!.offset, toOffset: range[2]!.offset }),
    ).toEqual({ replayed: 3, skipped: 0, unreplayable: 0, scanned: 3 });
    const all = (await a.inspectDeadLetters('orders', { limit: 100 })).letters; // partition 0, then 1
    const evenLeft = all.filter((l) => !l.replayed && idOf(l) % 2 === 0).map(idOf);
    const even = (l: { value: string }): boolean => idOf(l) % 2 === 0;
    expect(await a.replayDeadLetters('orders', { filter: even, limit: 2 })).toMatchObject({ replayed: 2 });
    await a.idle();
    expect(handled.map((h) => h.id).sort()).toEqual([...range.map(idOf), ...evenLeft.slice(0, 2)].sort());
    await a.stop();
  });

  it('refuses bad options, a subscriber without dead letters, and any call before start', async () => {
    const { app: a } = app(new Set());
    await expect(a.replayDeadLetters('orders')).rejects.toMatchObject({ code: 'APP_STATE' });
    await a.start();
    await expect(a.replayDeadLetters('nope')).rejects.toMatchObject({ code: 'UNKNOWN_SUBSCRIBER' });
    for (const bad of [{ limit: 0 }, { fromOffset: '-1' }, { toOffset: 'x' }, { partition: 7 }, { filter: 3 }])
      await expect(a.replayDeadLetters('orders', bad as never)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(a.inspectDeadLetters('orders', { after: '[1]' })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await a.stop();
    const none = new App({ name: 'none', logger: silentLogger }).withBroker(new MemoryBroker(), (b) =>
      b.include(
        subscriber('x', () => {})
          .name('x')
          .deadLetter(false)
          .build(),
      ),
    );
    await none.start();
    await expect(none.inspectDeadLetters('x')).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await none.stop();
  });
});
