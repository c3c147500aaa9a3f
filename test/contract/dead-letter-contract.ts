/**
 * The dead-letter part of the broker contract: a dead letter is the original message, byte for byte. Every
 * adapter runs it (test/contract/memory.test.ts, and the Kafka adapter's).
 */
import 'reflect-metadata';
import { afterEach, describe, expect, it } from 'vitest';
import {
  App,
  ERROR_HEADER,
  HandlerOutcome,
  ManualClock,
  silentLogger,
  subscriber,
  type Context,
  type HeaderValue,
  type Headers,
  type RawMessage,
} from '../../src/index.js';
import { type BrokerFixture, uniqueGroup, uniqueTopic } from './broker-contract.js';

/** A raw header or key as hex, so that bytes compare as bytes (a string stands for its UTF-8 bytes). */
const hex = (v: HeaderValue | readonly HeaderValue[] | undefined): unknown =>
  Array.isArray(v)
    ? (v as readonly HeaderValue[]).map(hex)
    : v === undefined || v === null
      ? v
      : Buffer.from(v as string | Uint8Array).toString('hex');

const bytes = (h: string): Buffer => Buffer.from(h, 'hex');

export function deadLetterContract(name: string, fixture: BrokerFixture): void {
  describe(`broker contract: ${name}: dead letters`, () => {
    const apps: App[] = [];
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.stop()));
    });

    it('are the original message: binary and repeated headers, a binary key in its partition, a tombstone', async () => {
      const topic = uniqueTopic('dlq-exact');
      await fixture.createTopic(topic, 3);
      await fixture.createTopic(`${topic}.dlq`, 3);
      const broker = fixture.connect();
      const seen: { raw: RawMessage; partition: number; text: Headers }[] = [];
      const dead: { raw: RawMessage; partition: number; reason: string | undefined }[] = [];
      const app = new App({
        name: uniqueGroup('g-dlq-exact'),
        clock: new ManualClock(),
        logger: silentLogger,
        shutdownTimeoutMs: 1_000,
      }).withBroker(broker, (b) => {
        b.include(
          subscriber(topic, (_raw: Uint8Array, ctx: Context) => {
            seen.push({ raw: ctx.message.raw, partition: ctx.message.partition, text: ctx.message.headers });
            return HandlerOutcome.reject('kept as it was');
          })
            .decode((raw) => raw)
            .build(),
        );
        b.include(
          subscriber(
            `${topic}.dlq`,
            (_raw: Uint8Array, ctx: Context) =>
              void dead.push({
                raw: ctx.message.raw,
                partition: ctx.message.partition,
                reason: ctx.message.headers[ERROR_HEADER],
              }),
          )
            .decode((raw) => raw)
            .build(),
        );
      });
      apps.push(app);
      await app.start();
      await broker.publish(topic, bytes('0001feff'), {
        key: 'text-key',
        headers: { 'x-bin': bytes('ff00fe8041'), 'x-twice': ['first', bytes('c328')], 'x-text': 'plain' },
      });
      await broker.publish(topic, 'binary key', { key: bytes('c328ff') });
      await broker.publish(topic, null, { key: 'gone', tombstone: true });
      await app.idle();

      expect(dead).toHaveLength(3);
      const byKey = <T extends { raw: RawMessage }>(list: T[], k: string): T =>
        list.find((d) => hex(d.raw.key ?? undefined) === k)!;
      const first = byKey(dead, Buffer.from('text-key').toString('hex'));
      expect(hex(first.raw.value ?? undefined)).toBe('0001feff');
      expect(hex(first.raw.headers['x-bin'])).toBe('ff00fe8041');
      expect(hex(first.raw.headers['x-twice'])).toEqual([Buffer.from('first').toString('hex'), 'c328']);
      expect(hex(first.raw.headers['x-text'])).toBe(Buffer.from('plain').toString('hex'));
      expect(first.reason).toBe('kept as it was');
      // The handler's text view: UTF-8 (U+FFFD for what is not), a repeated header's last value.
      const text = byKey(seen, Buffer.from('text-key').toString('hex')).text;
      expect(text).toMatchObject({
        'x-bin': Buffer.from('ff00fe8041', 'hex').toString('utf8'),
        'x-twice': Buffer.from('c328', 'hex').toString('utf8'),
        'x-text': 'plain',
      });

      // The handler saw the key's bytes too; one key lands in one partition of both topics (3 partitions each).
      const binary = byKey(dead, 'c328ff');
      expect(Buffer.from(binary.raw.value!).toString()).toBe('binary key');
      expect(binary.partition).toBe(byKey(seen, 'c328ff').partition);

      const gone = Buffer.from('gone').toString('hex');
      expect(byKey(seen, gone).raw.value).toBeNull();
      expect(byKey(dead, gone).raw.value).toBeNull();
    });
  });
}
