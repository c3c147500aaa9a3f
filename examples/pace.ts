/**
 * Pace: durable flow control per key (docs/pace.md). Two paced subscribers, driven by `app.send` and by
 * the broker, on a ManualClock so that the printout shows exact times:
 *
 * - `reindex` debounces row changes: a row's changes within 30 s of each other collapse into one run,
 *   started 30 s after the latest (or 2 minutes after the first, whichever comes first), with the latest
 *   change. Every receipt names that run before it exists.
 * - `clicks` batches clicks per user: up to 3, or whatever came within 10 s of the first.
 *
 * Run: node --no-warnings --loader ts-node/esm examples/pace.ts
 */
import { App, MemoryBroker, subscriber, type Context, type KeySource } from '../src/index.js';
import { ManualClock, memoryStore, silentLogger } from '../src/testing.js';

interface RowChange {
  rowId: string;
  column: string;
}
interface Click {
  user: string;
  button: string;
}

const clock = new ManualClock(Date.UTC(2026, 0, 1));
const t = (): string => `t+${((clock.now() - Date.UTC(2026, 0, 1)) / 1000).toFixed(0)}s`;
const broker = new MemoryBroker();

const reindex = subscriber('row-changes', async (latest: RowChange, ctx: Context) => {
  console.log(`${t()}  reindex run ${ctx.run!.id} (${ctx.run!.size} changes collapsed), latest: ${latest.column}`);
})
  .name('reindex')
  .pace({ debounce: { window: '30 seconds', maxWait: '2 minutes' } })
  .build();

const clicks = subscriber('clicks', async (batch: Click[], ctx: Context) => {
  console.log(`${t()}  clicks run for ${ctx.run!.key}: ${batch.map((c) => c.button).join(', ')}`);
})
  .key((m: KeySource<Click>) => m.value.user) // one message's key: a Click, though the handler gets Click[]
  .pace({ batch: { max: 3, wait: '10 seconds' } })
  .build();

// memoryStore keeps the example self-contained; an app without `store` journals in .sluice/<name>.
const app = new App({ name: 'pace-example', clock, store: memoryStore(), logger: silentLogger }).withBroker(
  broker,
  (b) => b.include(reindex, clicks),
);
await app.start();

// Three changes to row 7 within 30 s of each other: one run, 30 s after the last.
const first = await app.send('reindex', {
  key: 'row-7',
  event: { rowId: 'row-7', column: 'title' },
  eventId: 'change-1',
});
console.log(`${t()}  send change-1 -> ${JSON.stringify(first)}`);
await clock.advance(20_000);
const second = await app.send('reindex', {
  key: 'row-7',
  event: { rowId: 'row-7', column: 'price' },
  eventId: 'change-2',
});
console.log(
  `${t()}  send change-2 -> same run: ${second.kind === 'run' && first.kind === 'run' && second.runId === first.runId ? 'yes' : 'NO'}`,
);
// The sender retries change-2 (say its connection dropped): it joins once.
const retried = await app.send('reindex', {
  key: 'row-7',
  event: { rowId: 'row-7', column: 'price' },
  eventId: 'change-2',
});
console.log(`${t()}  send change-2 again -> ${JSON.stringify(retried)}`);

// Clicks from the broker: ann's third click fills her batch at once; bob's waits 10 s.
for (const [user, button] of [
  ['ann', 'buy'],
  ['bob', 'help'],
  ['ann', 'back'],
  ['ann', 'buy'],
] as const) {
  await broker.publish('clicks', { user, button } satisfies Click);
}
await app.idle();
await clock.advance(10_000);
await app.idle();
await clock.advance(20_000);
await app.idle();
await app.stop();
