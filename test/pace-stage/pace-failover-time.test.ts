/**
 * A debounced window across a gap in its partition's ownership, on the memory broker (its messages stamped
 * on the app's clock, as Kafka stamps them) and a store owned by partition: the events that the broker took
 * while no instance read the partition fall in windows by the time they were appended, and the new owner
 * closes no window on its clock before it has read them. So a key whose events never paused for the window's
 * length runs once, however long its partition had no owner.
 */
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  memoryStore,
  silentLogger,
  subscriber,
  type MemoryStore,
  type RunInfo,
} from '../../src/index.js';

const PARTITIONS = 2;
const KEYS = 8;
const GAP_MS = 2_000;
const EVERY_MS = 200;

function instance(broker: MemoryBroker, store: MemoryStore, clock: ManualClock, runs: RunInfo[]): App {
  return new App({ name: 'gap', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
    broker,
    (b) =>
      b.include(
        subscriber('ev', (_events: unknown, ctx) => void runs.push(ctx.run!))
          .name('ev')
          .pace({ debounce: GAP_MS })
          .build(),
      ),
  );
}

/** Every key's next event, then the clock moves on by less than the debounce window. */
async function tick(broker: MemoryBroker, clock: ManualClock): Promise<void> {
  for (let k = 0; k < KEYS; k++) await broker.publish('ev', { k }, { key: `k${k}` });
  await clock.advance(EVERY_MS);
}

describe('pace: a window across a gap in its partition’s ownership', () => {
  it.each([
    ['with the stream going on after the new owner joined', 10],
    ['with the stream stopped before it joined', 0],
  ])(
    'runs once per key, with every event, when its events kept it open while nobody read them (%s)',
    async (_, after) => {
      const clock = new ManualClock(1_000_000);
      const broker = new MemoryBroker({ topics: { ev: PARTITIONS }, now: () => clock.now() });
      const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
      const runs: RunInfo[] = [];
      const first = instance(broker, store, clock, runs);
      await first.start();
      for (let i = 0; i < 5; i++) await tick(broker, clock);
      await first.idle();
      await first.stop(); // its windows stay open in the store; nobody reads the partitions now
      const during = 30; // 6 s, three times the window, with an event every 200 ms
      for (let i = 0; i < during; i++) await tick(broker, clock);
      const second = instance(broker, store, clock, runs);
      await second.start();
      for (let i = 0; i < after; i++) {
        await tick(broker, clock);
        await second.idle();
      }
      await second.idle();
      await clock.advance(GAP_MS + 500);
      await second.idle();
      await clock.advance(GAP_MS);
      await second.idle();
      expect(runs.map((r) => r.key).sort()).toEqual(Array.from({ length: KEYS }, (_, k) => `k${k}`).sort());
      expect(new Set(runs.map((r) => r.size))).toEqual(new Set([5 + during + after]));
      await second.stop();
    },
  );
});
