/**
 * `sluice/testing`: what a test of a Sluice app uses. {@link ManualClock} moves time only when the test
 * says (with {@link settle} to let the work it made ready run), {@link memoryLogger} keeps every log line
 * to look at and {@link silentLogger} drops them, and {@link memoryStore} is a pace store in memory whose
 * `crash()` keeps only what was durable. Also what `app.subscribers()` gives, to check what a
 * configuration came to: {@link CompiledSubscriber}, over the built-in {@link DEFAULTS}. The repository's
 * `docs/testing.md` tells how to test an app with them.
 *
 * @example
 * ```ts
 * import { App, MemoryBroker, subscriber } from 'sluice';
 * import { ManualClock, memoryStore, silentLogger } from 'sluice/testing';
 *
 * const clock = new ManualClock(0);
 * const app = new App({ name: 't', clock, store: memoryStore(), logger: silentLogger })
 *   .withBroker(new MemoryBroker(), (b) => b.include(reindex));
 * await app.start();
 * await app.send(reindex, { key: 'row-7', event: { rowId: 'row-7' } });
 * await clock.advance(30_000); // the debounce window closes: its run is dispatched
 * await app.idle(); // ...and has finished
 * ```
 *
 * @module sluice/testing
 */
export { DEFAULTS, type CompiledSubscriber } from './declare/compile.js';
export { memoryStore, type MemoryStore, type MemoryStoreOptions, type MessageSink } from './store/memory-store.js';
export { ManualClock, settle } from './testing/manual-clock.js';
export { memoryLogger, silentLogger, type LogRecord } from './testing/memory-logger.js';
