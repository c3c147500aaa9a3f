/**
 * bench/dispatch: deliveries per second through App + MemoryBroker with a no-op async handler, beside a
 * bare loop over the same bytes in the same run (decode, await the same handler). Prints a table; the
 * ratio to the bare loop is the figure that counts (machines drift; ratios measured side by side do not).
 * Each case runs six times per round, in an order that turns round by round: plain, with metrics on (a
 * prom-client registry), with tracing on through the OpenTelemetry SDK (a BasicTracerProvider with no span
 * processor: every span is made, recorded and dropped, with an AsyncLocalStorageContextManager registered for
 * that run only), the same without the context manager (what the span costs without the async hooks), the
 * SDK with the context manager and a ParentBased(TraceIdRatioBased(0.01)) sampler on messages of which 1 in
 * 100 carries a sampled `traceparent` and the others one whose flags say not sampled (a producer upstream
 * that samples 1% of its traces, the consumer following its decision: 1% of the spans recorded), and with
 * tracing on and no SDK (the API's no-op tracer). In every run but the 1% one every message carries a sampled
 * `traceparent`, as from a traced producer. A second table gives each round's instrumented rate over the
 * plain one beside it, as a median.
 *
 *   npm run bench:dispatch            # 200,000 deliveries per case, 3 rounds
 *   BENCH_N=1000000 npm run bench:dispatch
 */
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { Registry } from 'prom-client';
import { App, MemoryBroker, silentLogger, subscriber, type AppOptions, type SubscriberBuilder } from '../src/index.js';

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

type Variant =
  | 'plain'
  | 'metrics'
  | 'tracing (SDK)'
  | 'tracing (SDK, no context manager)'
  | 'tracing (SDK, 1% sampled)'
  | 'tracing (no SDK)';
const VARIANTS: readonly Variant[] = [
  'plain',
  'metrics',
  'tracing (SDK)',
  'tracing (SDK, no context manager)',
  'tracing (SDK, 1% sampled)',
  'tracing (no SDK)',
];
/** A tracer provider that records every span and hands it to no processor. */
const sdk = new BasicTracerProvider();
/** The same, recording the spans whose parent was sampled (and 1% of the traces started here). */
const sampled = new BasicTracerProvider({
  sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.01) }),
});
/** Whether a run registers the context manager, as an app with tracing through the SDK has it. */
const managed = (variant: Variant): boolean => variant === 'tracing (SDK)' || variant === 'tracing (SDK, 1% sampled)';
const contextManager = new AsyncLocalStorageContextManager();

function optionsOf(variant: Variant): Partial<AppOptions> {
  if (variant === 'metrics') return { metrics: { registry: new Registry() } };
  if (variant === 'tracing (SDK, 1% sampled)') return { tracing: { tracerProvider: sampled } };
  if (variant.startsWith('tracing (SDK')) return { tracing: { tracerProvider: sdk } };
  if (variant === 'tracing (no SDK)') return { tracing: true };
  return {};
}

async function framework(
  bytes: Buffer[],
  keys: string[],
  configure: (b: SubscriberBuilder) => SubscriberBuilder,
  variant: Variant,
): Promise<number> {
  const broker = new MemoryBroker({ partitions: 1 });
  const carried = variant === 'tracing (SDK, 1% sampled)' ? parentsOnePercent : parents;
  for (let i = 0; i < N; i++)
    broker.publishNow('bench', bytes[i], { key: keys[i], headers: { traceparent: carried[i]! } });
  const app = new App({ name: 'bench', logger: silentLogger, ...optionsOf(variant) }).withBroker(broker, (b) =>
    b.include(configure(subscriber('bench', handler)).build()),
  );
  // The context manager (its async hooks) only for the runs traced with it, as an app with tracing has it.
  if (managed(variant)) context.setGlobalContextManager(contextManager.enable());
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await app.start();
  await app.idle();
  const rate = N / ((performance.now() - t0) / 1000);
  const cpu = process.cpuUsage(cpu0);
  lastCpuRate = N / ((cpu.user + cpu.system) / 1e6);
  await app.stop();
  if (managed(variant)) context.disable();
  if (broker.committed('bench', 'bench')[0] !== N) throw new Error('not every delivery was committed');
  return rate;
}

const cases: [string, (b: SubscriberBuilder) => SubscriberBuilder][] = [
  ['workers(1)', (b) => b.workers(1)],
  ['workers(16)', (b) => b.workers(16)],
  [`workersByKey(16), ${KEYS} keys`, (b) => b.workersByKey(16)],
];

const { bytes, keys } = payloads();
const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');
// Flat strings, as a broker's client decodes headers from bytes.
const traceparent = (i: number, flags: string): string =>
  Buffer.from(`00-${hex(i + 1, 32)}-${hex(i + 1, 16)}-${flags}`).toString('latin1');
const parents = keys.map((_, i) => traceparent(i, '01'));
/** 1 in 100 sampled, the others not: what a producer sampling 1% of its traces sends. */
const parentsOnePercent = keys.map((_, i) => traceparent(i, i % 100 === 0 ? '01' : '00'));
const best = new Map<string, number>();
const keep = (name: string, rate: number): void => void best.set(name, Math.max(best.get(name) ?? 0, rate));
/** Per case and instrumented variant, each round's rate over the plain rate measured beside it. */
const instrumented = new Map<string, number[]>();
/** The same, in deliveries per second of CPU time: less swayed by other processes on a loaded machine. */
const instrumentedCpu = new Map<string, number[]>();
const add = (to: Map<string, number[]>, name: string, ratio: number) => to.set(name, [...(to.get(name) ?? []), ratio]);
for (let round = 0; round < ROUNDS; round++) {
  keep('bare loop', await bareLoop(bytes));
  for (const [name, configure] of cases) {
    // The order turns round by round, so that no variant always runs on the warmer (or the more loaded) machine.
    const wall = new Map<Variant, number>();
    const cpu = new Map<Variant, number>();
    for (let i = 0; i < VARIANTS.length; i++) {
      const variant = VARIANTS[(round + i) % VARIANTS.length]!;
      wall.set(variant, await framework(bytes, keys, configure, variant));
      cpu.set(variant, lastCpuRate);
    }
    keep(name, wall.get('plain')!);
    for (const variant of VARIANTS.slice(1)) {
      add(instrumented, `${name}, ${variant}`, wall.get(variant)! / wall.get('plain')!);
      add(instrumentedCpu, `${name}, ${variant}`, cpu.get(variant)! / cpu.get('plain')!);
    }
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
console.log(
  '\n| case, instrumented | on / plain, same round: wall time, median (range) | per CPU second, median (range) |',
);
console.log('|---|---:|---:|');
for (const [name, ratios] of instrumented)
  console.log(`| ${name} | ${spread(ratios)} | ${spread(instrumentedCpu.get(name)!)} |`);
if (sink < 0) console.log(sink);
