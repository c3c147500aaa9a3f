/**
 * bench/middlewares: what middlewares cost per delivery. Deliveries per second of CPU time (user + system, so
 * that other processes on a shared machine count less than in wall time) through App + MemoryBroker with a
 * no-op handler on workers(16): with no middleware (the baseline), with one pass-through `app.use`, and with
 * three (app, router, subscriber). Cases alternate round by round in one process; each case's figure is the
 * median of its ratios to the no-middleware run of the same round.
 *
 * With `BENCH_BASE=<another checkout>/src/index.ts`, the no-middleware case also runs against that checkout's
 * code, alternating with this one's: the before/after of a change to the delivery path, in one process.
 *
 *   node --no-warnings --loader ts-node/esm bench/middlewares.ts
 *   BENCH_BASE=/tmp/main/src/index.ts BENCH_ROUNDS=9 node --no-warnings --loader ts-node/esm bench/middlewares.ts
 */
import * as here from '../src/index.js';

type Sluice = typeof here;
const N = Number(process.env.BENCH_N ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const base = process.env.BENCH_BASE === undefined ? undefined : ((await import(process.env.BENCH_BASE)) as Sluice);

let sink = 0;
const handler = async (v: { n: number }): Promise<void> => {
  sink += v.n;
};
const pass: here.Middleware = (_ctx, next) => next();
const bytes = Array.from({ length: N }, (_, i) => Buffer.from(JSON.stringify({ n: i, customer: `c${i % 1000}` })));

/** Deliveries per CPU second, from a topic filled beforehand until idle, every offset committed. */
async function rate(s: Sluice, middlewares: 0 | 1 | 3): Promise<number> {
  const broker = new s.MemoryBroker({ partitions: 1 });
  for (const b of bytes) broker.publishNow('bench', b);
  let spec = s.subscriber('bench', handler).workers(16);
  const router = new s.Router();
  if (middlewares === 3) {
    spec = spec.use(pass);
    router.use(pass);
  }
  let app = new s.App({ name: 'bench', logger: s.silentLogger });
  if (middlewares > 0) app = app.use(pass);
  app.withBroker(broker, (b) => b.include(router.include(spec)));
  const t0 = process.cpuUsage();
  await app.start();
  await app.idle();
  const used = process.cpuUsage(t0);
  await app.stop();
  if (broker.committed('bench', 'bench')[0] !== N) throw new Error('not every delivery was committed');
  return N / ((used.user + used.system) / 1e6);
}

const cases: [string, () => Promise<number>][] = [
  ['no middleware', () => rate(here, 0)],
  ['1 middleware (app.use)', () => rate(here, 1)],
  ['3 middlewares (app, router, subscriber)', () => rate(here, 3)],
];
if (base) cases.splice(1, 0, ['no middleware, BENCH_BASE', () => rate(base, 0)]);

const rates = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (let round = 0; round < ROUNDS; round++) for (const [name, run] of cases) rates.get(name)!.push(await run());
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
// Each case's ratio to the baseline of its own round, then the median of those: pairs run seconds apart.
const baseline = rates.get('no middleware')!;
console.log(
  `bench/middlewares: ${N.toLocaleString('en')} deliveries per case, workers(16), ${ROUNDS} rounds, node ${process.version}`,
);
console.log('| case | deliveries per CPU second (median) | median of per-round ratios to no middleware |');
console.log('|---|---:|---:|');
for (const [name, xs] of rates) {
  const ratio = median(xs.map((x, i) => x / baseline[i]!));
  console.log(`| ${name} | ${Math.round(median(xs)).toLocaleString('en')} | ${ratio.toFixed(2)} |`);
}
if (sink < 0) console.log(sink);
