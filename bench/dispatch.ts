/**
 * bench/dispatch: deliveries per second through App + MemoryBroker with a no-op async handler, beside a
 * bare loop over the same bytes in the same run (decode, await the same handler). Prints a table; the
 * ratio to the bare loop is the figure that counts (machines drift; ratios measured side by side do not).
 * Each case runs twice per round, alternating, plain and with metrics on (a prom-client registry), and a
 * second table gives each round's metrics-on rate over the plain one beside it, as a median.
 *
 *   npm run bench:dispatch            # 200,000 deliveries per case, 3 rounds
 *   BENCH_N=1000000 npm run bench:dispatch
 */
import { Registry } from 'prom-client';
import { App, MemoryBroker, silentLogger, subscriber, type SubscriberBuilder } from '../src/index.js';

const N = Number(process.env.BENCH_N ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const KEYS = 1_000;

let sink = 0;
const handler = async (v: { n: number }): Promise<void> => {
  sink += v.n;
};

function payloads(): { bytes: Buffer[]; keys: string[] } {
  const bytes: Buffer[] = [];
  const keys: string[] = [];
  for (let i = 0; i < N; i++) {
    bytes.push(Buffer.from(JSON.stringify({ n: i, customer: `c${i % KEYS}`, amount: 1999 })));
    keys.push(`c${i % KEYS}`);
  }
  return { bytes, keys };
}

async function bareLoop(bytes: Buffer[]): Promise<number> {
  const t0 = performance.now();
  for (const b of bytes) await handler(JSON.parse(b.toString('utf8')) as { n: number });
  return N / ((performance.now() - t0) / 1000);
}

/** The last framework run's deliveries per second of this process's CPU time (user + system). */
let lastCpuRate = 0;

async function framework(
  bytes: Buffer[],
  keys: string[],
  configure: (b: SubscriberBuilder) => SubscriberBuilder,
  metrics: boolean,
): Promise<number> {
  const broker = new MemoryBroker({ partitions: 1 });
  for (let i = 0; i < N; i++) broker.publishNow('bench', bytes[i], { key: keys[i] });
  const options = metrics ? { metrics: { registry: new Registry() } } : {};
  const app = new App({ name: 'bench', logger: silentLogger, ...options }).withBroker(broker, (b) =>
    b.include(configure(subscriber('bench', handler)).build()),
  );
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await app.start();
  await app.idle();
  const rate = N / ((performance.now() - t0) / 1000);
  const cpu = process.cpuUsage(cpu0);
  lastCpuRate = N / ((cpu.user + cpu.system) / 1e6);
  await app.stop();
  if (broker.committed('bench', 'bench')[0] !== N) throw new Error('not every delivery was committed');
  return rate;
}

const cases: [string, (b: SubscriberBuilder) => SubscriberBuilder][] = [
  ['workers(1)', (b) => b.workers(1)],
  ['workers(16)', (b) => b.workers(16)],
  [`workersByKey(16), ${KEYS} keys`, (b) => b.workersByKey(16)],
];

const { bytes, keys } = payloads();
const best = new Map<string, number>();
const keep = (name: string, rate: number): void => void best.set(name, Math.max(best.get(name) ?? 0, rate));
/** Per case, each round's rate with metrics on over the plain rate measured beside it. */
const instrumented = new Map<string, number[]>();
/** The same, in deliveries per second of CPU time: less swayed by other processes on a loaded machine. */
const instrumentedCpu = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  keep('bare loop', await bareLoop(bytes));
  for (const [name, configure] of cases) {
    // Alternate which goes first, so that neither always runs on the warmer (or the more loaded) machine.
    const first = round % 2 === 0;
    const a = await framework(bytes, keys, configure, !first);
    const aCpu = lastCpuRate;
    const b = await framework(bytes, keys, configure, first);
    const [plain, metered] = first ? [a, b] : [b, a];
    const [plainCpu, meteredCpu] = first ? [aCpu, lastCpuRate] : [lastCpuRate, aCpu];
    keep(name, plain);
    instrumented.set(name, [...(instrumented.get(name) ?? []), metered / plain]);
    instrumentedCpu.set(name, [...(instrumentedCpu.get(name) ?? []), meteredCpu / plainCpu]);
  }
}
const bare = best.get('bare loop')!;
console.log(
  `bench/dispatch: ${N.toLocaleString('en')} deliveries per case, best of ${ROUNDS} rounds, node ${process.version}`,
);
console.log('| case | deliveries/s | ratio to bare loop |');
console.log('|---|---:|---:|');
for (const [name, rate] of best)
  console.log(`| ${name} | ${Math.round(rate).toLocaleString('en')} | ${(rate / bare).toFixed(2)} |`);
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[]) =>
  `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
console.log('\n| case | metrics on / plain, same round: wall time, median (range) | per CPU second, median (range) |');
console.log('|---|---:|---:|');
for (const [name, ratios] of instrumented)
  console.log(`| ${name} | ${spread(ratios)} | ${spread(instrumentedCpu.get(name)!)} |`);
if (sink < 0) console.log(sink);
