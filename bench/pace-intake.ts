/**
 * bench/pace-intake: the paced intake's own work, with no broker or disk under it. An App on a MemoryBroker and a
 * memoryStore (4 shards owned by partition) reads N small keyed JSON messages (10,000 keys, 4 partitions) with a
 * paced subscriber (`debounce: '1 hour'`: no window closes, every delivery an `event` record applied and
 * journaled); beside it, in the same round, the same messages read by a plain subscriber with a no-op handler
 * (the dispatch path alone: decode, offsets, workers). Each figure is the process's CPU time (user + system)
 * per delivery from `start()` to `idle()`, the topic filled before; the ratio is paced over plain in the same
 * round. What the pace path adds to a delivery, measured where nothing waits on I/O.
 *
 *   npm run bench:pace-intake
 *   BENCH_N=300000 BENCH_ROUNDS=7 npm run bench:pace-intake
 */
import { App, MemoryBroker, memoryStore, silentLogger, subscriber, type SubscriberBuilder } from '../src/index.js';
import { median, range } from './stats.js';

const N = Number(process.env.BENCH_N ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const KEYS = 10_000;
const PARTITIONS = 4;

/** CPU µs per delivery of one subscriber reading the N messages from a fresh broker. */
async function cpuPerDelivery(paced: boolean): Promise<number> {
  const broker = new MemoryBroker();
  await broker.createTopic('in', PARTITIONS);
  for (let i = 0; i < N; i++) {
    const value = Buffer.from(JSON.stringify({ id: i, name: 'x'.repeat(40), at: 1_765_000_000_000 + i }));
    broker.publishNow('in', value, { key: `key-${i % KEYS}` });
  }
  const spec: SubscriberBuilder<unknown> = subscriber('in', () => {}).name('p');
  const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
  const app = new App({ name: 'bench-pace-intake', logger: silentLogger, ...(paced && { store }) }).withBroker(
    broker,
    (b) => b.include((paced ? spec.pace({ debounce: '1 hour' }) : spec.workers(16)).build()),
  );
  const c0 = process.cpuUsage();
  await app.start();
  await app.idle();
  const c = process.cpuUsage(c0);
  await app.stop();
  return (c.user + c.system) / N;
}

console.log(
  `bench/pace-intake: ${N.toLocaleString('en')} messages, ${KEYS} keys, ${ROUNDS} rounds, node ${process.version}`,
);
await cpuPerDelivery(true); // warm-up: the JIT, not measured
const paced: number[] = [];
const plain: number[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  // The order alternates: a drift of the machine falls on both sides.
  if (round % 2) {
    paced.push(await cpuPerDelivery(true));
    plain.push(await cpuPerDelivery(false));
  } else {
    plain.push(await cpuPerDelivery(false));
    paced.push(await cpuPerDelivery(true));
  }
  console.log(
    `  round ${round}: paced ${paced.at(-1)!.toFixed(2)} µs, plain ${plain.at(-1)!.toFixed(2)} µs a delivery`,
  );
}
const ratios = paced.map((p, i) => p / plain[i]!);
console.log('\n| path | CPU µs a delivery (median) | range |');
console.log('|---|---:|---:|');
console.log(`| plain subscriber, no-op handler | ${median(plain).toFixed(2)} | ${range(plain)} |`);
console.log(`| paced subscriber (debounce), memoryStore | ${median(paced).toFixed(2)} | ${range(paced)} |`);
console.log(`\npaced / plain, same round: ${median(ratios).toFixed(2)} (${range(ratios)})`);
