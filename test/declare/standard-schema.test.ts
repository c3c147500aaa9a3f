/**
 * Decoders of the Standard Schema interface (`~standard`, as valibot, arktype and zod expose it): the
 * JSON-decoded value is validated, the schema's value reaches the handler (its type too), its issues
 * dead-letter the message with DECODE_FAILED naming each issue and its path, and what is not a schema is
 * refused at mount.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { App, MemoryBroker, silentLogger, subscriber, type StandardSchema } from '../../src/index.js';
import { expectError } from '../expect-error.js';

interface Order {
  readonly id: string;
  readonly cents: number;
}

/** A hand-written validator of the interface: what any library behind it hands Sluice. */
const order: StandardSchema<Order> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate(value) {
      const v = value as { id?: unknown; cents?: unknown } | null;
      const issues = [];
      if (typeof v?.id !== 'string') issues.push({ message: 'expected a string', path: ['id'] });
      if (!Number.isInteger(v?.cents)) issues.push({ message: 'expected an integer', path: [{ key: 'cents' }] });
      if (issues.length > 0) return { issues };
      return { value: { id: v!.id as string, cents: (v!.cents as number) * 1 } };
    },
  },
};

async function run(decode: StandardSchema<unknown>, values: unknown[]) {
  const broker = new MemoryBroker();
  const got: unknown[] = [];
  const app = new App({ name: 'app', logger: silentLogger }).withBroker(broker, (b) =>
    b.include(
      subscriber('t')
        .decode(decode)
        .handle((v) => void got.push(v)),
    ),
  );
  for (const v of values) await broker.publish('t', v);
  await app.start();
  await app.idle();
  await app.stop();
  return { got, deadLetters: broker.messages('t.dlq').map((m) => m.headers['x-sluice-error']), broker };
}

describe('a Standard Schema decoder', () => {
  it("hands the schema's value to the handler, and dead-letters what it refuses, naming each issue and path", async () => {
    const { got, deadLetters, broker } = await run(order, [
      { id: 'a', cents: 100 },
      { id: 7, cents: 1.5 },
      { id: 'b', cents: 200 },
    ]);
    expect(got).toEqual([
      { id: 'a', cents: 100 },
      { id: 'b', cents: 200 },
    ]);
    expect(deadLetters).toEqual([
      'DECODE_FAILED: the schema refused the value: id: expected a string; cents: expected an integer',
    ]);
    expect(broker.committed('app', 't')).toEqual([3]);
  });

  it('dead-letters a message whose schema answers asynchronously: decoding answers at once', async () => {
    const later: StandardSchema<unknown> = {
      '~standard': { version: 1, vendor: 'test', validate: (value) => Promise.resolve({ value }) },
    };
    const { got, deadLetters } = await run(later, [{ id: 'a' }]);
    expect(got).toEqual([]);
    expect(deadLetters).toEqual(['DECODE_FAILED: the schema validates asynchronously; a decoder must answer at once']);
  });

  it('calls an object that has parse() through parse, as before (a zod schema has both)', async () => {
    const both = {
      ...order,
      parse: (v: unknown) => ({ parsed: v }),
    } as StandardSchema<unknown>;
    const { got } = await run(both, [{ id: 'a', cents: 1 }]);
    expect(got).toEqual([{ parsed: { id: 'a', cents: 1 } }]);
  });

  it("gives the handler the schema's type", () => {
    subscriber('orders')
      .decode(order)
      .handle((o) => {
        expectTypeOf(o).toEqualTypeOf<Order>();
      });
    // @ts-expect-error -- a handler of strings for decoded orders
    subscriber('orders', (_s: string) => {}).decode(order);
  });

  it('refuses at mount an object whose ~standard is not version 1 with a validate function', () => {
    for (const bad of [{ '~standard': { version: 2, validate: () => ({}) } }, { '~standard': { version: 1 } }])
      expectError(
        () =>
          subscriber('t', () => {})
            .decode(bad as never)
            .build(),
        'CONFIG_INVALID',
        /decode must be a function, an object with parse\(\), or a Standard Schema/,
      );
  });
});
