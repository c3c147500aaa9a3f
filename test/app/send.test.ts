/**
 * `app.send` takes a paced subscriber's spec or its name, and types the event: by the handler for a spec,
 * as a JSON value for a name. The type checks below are compiled by `npm run typecheck` (a
 * `@ts-expect-error` that no longer fails to compile fails it); the tests run the calls that do compile.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  memoryStore,
  silentLogger,
  subscriber,
  type PacedStart,
  type Receipt,
} from '../../src/index.js';

interface RowChange {
  rowId: string;
  at?: string;
}

const reindex = subscriber('row-changes', (_latest: RowChange) => {})
  .name('reindex')
  .pace({ debounce: 10 })
  .build();
const clicks = subscriber('clicks', (_batch: RowChange[]) => {})
  .name('clicks')
  .pace({ batch: { max: 10, wait: 10 } })
  .build();
const untyped = subscriber('untyped', () => {})
  .name('untyped')
  .pace({ debounce: 10 })
  .build();
const plain = subscriber('plain', (_row: RowChange) => {}).build();

/** Never called: what compiles and what does not. */
function typeChecks(app: App): void {
  const row: RowChange = { rowId: 'r' };
  expectTypeOf(app.send(reindex, { key: 'k', event: row })).toEqualTypeOf<Promise<Receipt>>();
  // By spec: the handler's payload, or one element of a batch handler's array.
  void app.send(reindex, { key: 'k', event: { rowId: 'r', at: '2026-01-01' } });
  void app.send(clicks, { key: 'k', event: row });
  void app.send(clicks, { key: 'k', event: [row] });
  // @ts-expect-error a field of the wrong type
  void app.send(reindex, { key: 'k', event: { rowId: 7 } });
  // @ts-expect-error not what the handler takes
  void app.send(reindex, { key: 'k', event: 'r' });
  // @ts-expect-error a function is not JSON, whatever the handler takes
  void app.send(untyped, { key: 'k', event: () => 1 });

  // By name: any value JSON keeps, interfaces and values with toJSON included.
  void app.send('reindex', { key: 'k', event: row });
  void app.send('reindex', { key: 'k', event: { n: [1, 'two', null, true], at: new Date() } });
  const fromElsewhere: unknown = row;
  void app.send('reindex', { key: 'k', event: fromElsewhere }); // checked when sent
  // @ts-expect-error a function is not JSON
  void app.send('no-such', { event: () => 1 });
  // @ts-expect-error a function is not JSON
  void app.send('no-such', { key: 'k', event: () => 1 });
  // @ts-expect-error nor is an object holding one
  void app.send('reindex', { key: 'k', event: { rowId: 'r', then: () => {} } });
  // @ts-expect-error nor a bigint
  void app.send('reindex', { key: 'k', event: { n: 1n } });
  // @ts-expect-error nor undefined
  void app.send('reindex', { key: 'k', event: undefined });
  // @ts-expect-error nor a Map (JSON makes it {})
  void app.send('reindex', { key: 'k', event: new Map([['a', 1]]) });
  // @ts-expect-error the key is a string
  void app.send('reindex', { key: 7, event: row });

  expectTypeOf<PacedStart<RowChange>['event']>().toEqualTypeOf<RowChange>();
}
void typeChecks;

describe('app.send', () => {
  async function running(): Promise<{ app: App; clock: ManualClock; got: string[] }> {
    const clock = new ManualClock(0);
    const got: string[] = [];
    const app = new App({ name: 'send', clock, store: memoryStore(), logger: silentLogger }).withBroker(
      new MemoryBroker(),
      (b) =>
        b.include(
          subscriber('rows', (row: RowChange) => void got.push(row.rowId))
            .pace({ debounce: 10 })
            .build(),
        ),
    );
    await app.start();
    return { app, clock, got };
  }

  it('takes the subscriber by its spec or by its name: both start the same run', async () => {
    const clock = new ManualClock(0);
    const got: RowChange[] = [];
    const spec = subscriber('rows', (row: RowChange) => void got.push(row))
      .name('rows')
      .pace({ debounce: 10 })
      .build();
    const app = new App({ name: 'send', clock, store: memoryStore(), logger: silentLogger }).withBroker(
      new MemoryBroker(),
      (b) => b.include(spec),
    );
    await app.start();
    const bySpec = await app.send(spec, { key: 'k', event: { rowId: 'a' } });
    const byName = await app.send('rows', { key: 'k', event: { rowId: 'b' } });
    expect(byName).toEqual(bySpec); // one debounce window: one run
    await clock.advance(10);
    await app.idle();
    expect(got).toEqual([{ rowId: 'b' }]);
    await app.stop();
  });

  it('refuses a spec that is not mounted in the app as an unknown subscriber', async () => {
    const { app } = await running();
    await expect(app.send(reindex, { key: 'k', event: { rowId: 'r' } })).rejects.toMatchObject({
      code: 'UNKNOWN_SUBSCRIBER',
      message: expect.stringMatching(/no subscriber is named "reindex"/),
    });
    await app.stop();
  });

  it('refuses a subscriber without pace, by spec as by name', async () => {
    const app = new App({ name: 'send', store: memoryStore(), logger: silentLogger }).withBroker(
      new MemoryBroker(),
      (b) => b.include(plain),
    );
    await app.start();
    await expect(app.send(plain, { key: 'k', event: { rowId: 'r' } })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    await expect(app.send(plain.name, { key: 'k', event: { rowId: 'r' } })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    await app.stop();
  });

  it('refuses, as a rejection, a subscriber that is neither a spec nor a name (from JavaScript)', async () => {
    const { app } = await running();
    await expect(app.send(42 as unknown as string, { key: 'k', event: 1 })).rejects.toMatchObject({
      code: 'UNKNOWN_SUBSCRIBER',
      message: expect.stringMatching(/no subscriber is named 42/),
    });
    await app.stop();
  });

  it('refuses a start with a field it does not know (a misspelt eventId would turn dedup off), journaling nothing', async () => {
    const { app, clock, got } = await running();
    const typo = { key: 'k', event: { rowId: 'a' }, evntId: 'e-1' } as unknown as PacedStart;
    await expect(app.send('rows', typo)).rejects.toMatchObject({
      code: 'SEND_INVALID',
      message: expect.stringMatching(/fields key, event and eventId only \("evntId" is not one\)/),
    });
    await expect(app.send('rows', null as unknown as PacedStart)).rejects.toMatchObject({ code: 'SEND_INVALID' });
    await clock.advance(10);
    await app.idle();
    expect(got).toEqual([]);
    await app.stop();
  });

  it.each([
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
  ])('refuses an event that holds %s (JSON would deliver null), however deep, journaling nothing', async (name, n) => {
    const { app, clock, got } = await running();
    for (const event of [n, { rowId: 'a', at: n }, { rowId: 'a', deep: [[{ x: n }]] }])
      await expect(app.send('rows', { key: 'k', event })).rejects.toMatchObject({
        code: 'SEND_INVALID',
        message: expect.stringContaining(`event holds ${name}, which JSON cannot carry`),
      });
    expect(await app.send('rows', { key: 'k', event: { rowId: 'b', at: null } })).toMatchObject({ kind: 'run' });
    await clock.advance(10);
    await app.idle();
    expect(got).toEqual(['b']);
    await app.stop();
  });
});
