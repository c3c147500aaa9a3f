import { describe, expect, it } from 'vitest';
import { App, ManualClock, MemoryBroker, memoryStore, silentLogger, subscriber } from '../../src/index.js';
import { MAX_KEY_BYTES } from '../../src/pace/config.js';

/** A key of exactly `bytes` UTF-8 bytes, with two-byte characters in it. */
const keyOf = (bytes: number): string => 'é'.repeat(Math.floor(bytes / 2)) + (bytes % 2 === 1 ? 'a' : '');
const MIB = 1024 * 1024;

function paced() {
  const clock = new ManualClock(0);
  const broker = new MemoryBroker();
  const ran: unknown[] = [];
  const app = new App({ name: 'limits', logger: silentLogger, clock, store: memoryStore() }).withBroker(broker, (b) =>
    b.include(
      subscriber('t', (e: unknown) => void ran.push(e))
        .name('p')
        .pace({ debounce: 10 })
        .build(),
    ),
  );
  return { app, clock, broker, ran };
}

describe('pace: the limits of a key and an event', () => {
  it('refuses a key over MAX_KEY_BYTES and an event over 64 MiB with SEND_INVALID naming the limit, and goes on serving', async () => {
    const { app, clock, ran } = paced();
    await app.start();
    expect(Buffer.byteLength(keyOf(MAX_KEY_BYTES))).toBe(65_535);
    // The longest key is taken (with a lone surrogate's three bytes too), and runs under that key.
    await expect(app.send('p', { key: keyOf(MAX_KEY_BYTES), event: 'longest' })).resolves.toMatchObject({
      duplicate: false,
    });
    await expect(
      app.send('p', { key: keyOf(MAX_KEY_BYTES - 3) + '\uD800', event: 'surrogate' }),
    ).resolves.toMatchObject({ duplicate: false });
    await expect(app.send('p', { key: keyOf(MAX_KEY_BYTES + 1), event: 1 })).rejects.toMatchObject({
      code: 'SEND_INVALID',
      message: expect.stringMatching(/a key may take at most MAX_KEY_BYTES \(65535\) bytes as UTF-8, got 65536/),
    });
    await expect(app.send('p', { key: '€'.repeat(21_846), event: 1 })).rejects.toMatchObject({
      code: 'SEND_INVALID',
      message: expect.stringMatching(/got 65538/),
    });
    await expect(app.send('p', { key: 'k', event: 'x'.repeat(64 * MIB) })).rejects.toMatchObject({
      code: 'SEND_INVALID',
      message: expect.stringMatching(/may take at most 64 MiB.*at most 67108864 bytes, got 67108\d{3}/),
    });
    await expect(app.send('p', { key: 'k', event: 'fits', eventId: 'i' })).resolves.toMatchObject({ duplicate: false });
    await clock.advance(10);
    await app.idle();
    expect(ran.sort()).toEqual(['fits', 'longest', 'surrogate']);
    await app.stop();
  });

  it('dead-letters a delivery whose key or event is over the limit, with the reason, and commits its offset', async () => {
    const { app, clock, broker, ran } = paced();
    await broker.createTopic('t', 1);
    await broker.publish('t', { s: 'long key' }, { key: keyOf(MAX_KEY_BYTES + 1) });
    await broker.publish('t', { s: 'y'.repeat(64 * MIB) }, { key: 'k' });
    await broker.publish('t', { s: 'fine' }, { key: 'k' });
    await app.start();
    await app.idle();
    await clock.advance(10);
    await app.idle();
    expect(ran).toEqual([{ s: 'fine' }]);
    const reasons = broker.messages('t.dlq').map((m) => m.headers['x-sluice-error']);
    expect(reasons).toEqual([
      expect.stringMatching(
        /cannot be journaled for pace: .*a key may take at most MAX_KEY_BYTES \(65535\) bytes as UTF-8, got 65536/,
      ),
      expect.stringMatching(/cannot be journaled for pace: .*may take at most 64 MiB/),
    ]);
    expect(broker.committed('limits', 't')).toEqual([3]); // nothing left to read again after a restart
    await app.stop();
  });
});
