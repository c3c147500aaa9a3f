/**
 * bench/peers/streams: Sluice's pace across machines beside Kafka Streams (Java), on one Kafka broker in one run.
 *
 *   npm run bench:streams
 *
 * Each side runs as 2 child processes in one group (drivers/KafkaStreamsDriver.java: Kafka Streams 3.9.1,
 * processing.guarantee exactly_once_v2, one stream thread; drivers/sluice-pace.mjs: an App from dist/ with a
 * paced subscriber on a KafkaBroker and kafkaStore({ ownership: 'partition' })), on a fresh input topic of 6
 * partitions, output topic and group per run. Both write each result to the output topic, which this process
 * reads (read_committed) and counts; session timeout 6 s, heartbeat 500 ms, fetch wait 100 ms on both sides.
 *  debounce: Kafka Streams session windows (inactivity gap G, grace 0) + suppress(untilWindowCloses(
 *            unbounded())), one result per key-session; Sluice pace({ debounce: G }), one run per window.
 *  batch:    Kafka Streams a processor with a persistent key-value store collecting a key's events and
 *            forwarding them at n; Sluice pace({ batch: { max: n, wait: '1 minute' } }).
 * Trailing events: once the input of a run is sent, this process sends one event per partition every 100 ms
 * (keys tick-<n>, one per partition) until the run ends. Kafka Streams needs them: suppress emits a session
 * only when stream time (the highest timestamp its task has read) passes the session's end + G, and a key
 * that went quiet moves nothing on. Sluice's windows close on its clock; it takes the ticks like any event.
 * Measured run (ROUNDS per side and mode, the sides alternating): both instances up and their partitions
 * settled, then
 *  - throughput: a backlog of KEYS × PER_KEY events sent at once (event time in the past, 10 ms apart per key:
 *    one session per key), events / (first event read by either instance → last backlog window read).
 *    Sluice's debounce closes a window G after its last event arrived (processing time), Kafka Streams when
 *    it reads the first tick (event time): G is taken off Sluice's span, and the spans are printed as well;
 *  - delay: then 100 live keys (3 events each for debounce, n for batch) at 200 events/s; per window, the
 *    time from its end (latest event's timestamp + G; the batch's last event) to its result being read;
 *  - the results counted against the input (duplicates, splits, lost) as below.
 * Kill run (one per side and mode): both up, then 300 keys × 40 events at 1,500/s (a key's events 200 ms
 * apart, well within G), the first instance SIGKILLed when half is sent; waits until every event is in a window
 * read, then 5 s more (120 s at most). Counted per key: windows read (by id: Kafka Streams key@session start
 * or key@first seq, Sluice the run ID), the same window read twice (duplicated), windows beyond those due on
 * a key that has all its events (split), events in no window (lost) or in two (doubled).
 * Kafka Streams with exactly_once_v2 promises each window's result once. So does Sluice, its subscriber marked
 * exactlyOnce: a run's result commits with its done record in the Kafka store's transaction, and a run in
 * flight at the kill runs again on the survivor under the same ID (BENCH_STREAMS_AT_LEAST_ONCE=1 drops
 * exactlyOnce: the result is published before the done record, at least once). Its windows go by its
 * clock, but a shard taken over gathers its partition's backlog by broker time and closes no window on the
 * clock before it has read it, so the time a partition had no owner splits no window. Figures and
 * findings: docs/benchmarks.md.
 *
 * Environment: BENCH_STREAMS_ROUNDS (2), BENCH_STREAMS_MODES (debounce,batch), BENCH_STREAMS_SIDES
 * (streams,sluice), BENCH_STREAMS_PARTS (measure,kill), BENCH_STREAMS_KEYS (500), BENCH_STREAMS_PER_KEY (60),
 * BENCH_STREAMS_GAP_MS (2000), BENCH_STREAMS_BATCH (10), BENCH_STREAMS_AT_LEAST_ONCE (0), BENCH_DEBUG (the children's lines and stderr;
 * SLUICE_LOG_LEVEL=debug adds Sluice's log), KAFKA_BROKERS
 * (else scripts/kafka/start.mjs). Jars into ${SLUICE_CACHE:-~/.cache/sluice}/peers (bench/peers/setup.ts).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fmt, median } from '../stats.js';
import { ROOT, driver, javaCommand, setupJavaDriver, sh } from './setup.js';
import { kill, killAll, spawnInstance, steady, stop, until, type Instance } from './streams-children.js';
import { accounted, delays, lastReadAt, tally, type Expected, type Mode, type Tally } from './streams-count.js';
import * as io from './streams-kafka.js';

const env = (name: string, dflt: string) => process.env[`BENCH_STREAMS_${name}`] ?? dflt;
const ROUNDS = Number(env('ROUNDS', '2'));
const MODES = env('MODES', 'debounce,batch').split(',') as Mode[];
const SIDES = env('SIDES', 'streams,sluice').split(',') as Side[];
const PARTS = env('PARTS', 'measure,kill').split(',');
const KEYS = Number(env('KEYS', '500'));
const PER_KEY = Number(env('PER_KEY', '60'));
const GAP_MS = Number(env('GAP_MS', '2000'));
const BATCH = Number(env('BATCH', '10'));
const AT_LEAST_ONCE = env('AT_LEAST_ONCE', '0') === '1';
const P = 6;
const SESSION_TIMEOUT_MS = 6_000;
const LIVE = { keys: 100, perSecond: 200 };
const KILL = { keys: 300, perKey: 40, perSecond: 1_500 };

type Side = 'streams' | 'sluice';
const LABEL: Record<Side, string> = { streams: 'Kafka Streams 3.9.1 (exactly_once_v2)', sluice: 'Sluice (dist/)' };
const COMMAND: Record<Side, () => { cmd: string; args: string[] }> = {
  streams: () => javaCommand('KafkaStreamsDriver', ['-Xmx512m']),
  sluice: () => ({ cmd: process.execPath, args: [driver('sluice-pace.mjs')] }),
};

const say = (msg: string): void => void process.stderr.write(`[streams] ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------------
// A run: topics, the result reader, two instances settled; everything removed afterwards

interface World {
  readonly side: Side;
  readonly mode: Mode;
  readonly input: string;
  /** The consumer group of both instances (Kafka Streams' application.id, Sluice's app name). */
  readonly group: string;
  readonly instances: Instance[];
  readonly results: io.Result[];
}

const stamp = Date.now().toString(36);
const stateRoot = path.join(os.tmpdir(), `sluice-bench-streams-${stamp}`);
let runNo = 0;

async function withWorld<T>(k: io.Io, side: Side, mode: Mode, body: (w: World) => Promise<T>): Promise<T> {
  const base = `streams-${stamp}-${side}-${mode}-${++runNo}`;
  const input = `${base}-in`;
  const output = `${base}-out`;
  const group = `${base}-app`;
  await io.createTopics(k, [input, output], P);
  const results: io.Result[] = [];
  const reader = await io.readResults(k, output, results);
  const spec = (i: string) => ({
    brokers: [brokers],
    input,
    output,
    app: group,
    mode,
    gapMs: GAP_MS,
    batchSize: BATCH,
    partitions: P,
    prefix: `${base}-store`,
    stateDir: path.join(stateRoot, `${runNo}-${i}`),
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    tickPrefix: io.TICK_PREFIX,
    atLeastOnce: AT_LEAST_ONCE,
  });
  const instances: Instance[] = [];
  try {
    for (const i of ['a', 'b']) {
      spawnInstance(instances, `${side}-${i}`, COMMAND[side](), { STREAMS_SPEC: JSON.stringify(spec(i)) });
      await until(() => instances.at(-1)!.up, `${side}-${i} to start`, 90_000, instances);
    }
    await until(() => steady(instances, P), `${side}: both instances to settle`, 90_000, instances);
    return await body({ side, mode, input, group, instances, results });
  } finally {
    await Promise.all(instances.map((c) => stop(c)));
    await reader.stop();
    await io.deleteTopicsOf(k, base);
    fs.rmSync(stateRoot, { recursive: true, force: true });
  }
}

const keysOf = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

// ---------------------------------------------------------------------------------------------------------
// Measured run: throughput over a backlog, then the delay of live windows

interface Measured {
  /** Backlog events / (first event read → last backlog window read, less G on Sluice's debounce). */
  readonly rate: number;
  /** Backlog events / (first event read → the group's offsets committed past the backlog). */
  readonly intake: number;
  /** First event read → last backlog window read, ms (before G is taken off Sluice's debounce). */
  readonly spanMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly backlog: Tally;
  readonly live: Tally;
  readonly load: number;
}

async function measure(k: io.Io, side: Side, mode: Mode): Promise<Measured> {
  return withWorld(k, side, mode, async (w) => {
    const load = os.loadavg()[0]!;
    const backlog: Expected = { keys: keysOf('k', KEYS), perKey: PER_KEY, mode, batchSize: BATCH };
    await io.sendBacklog(k, w.input, KEYS, PER_KEY, Date.now() - 60_000);
    const ends = await io.endOffsets(k, w.input);
    let measuring = true;
    const committed = io.committedAt(k, w.group, w.input, ends, () => !measuring);
    const ticks = io.startTicks(k, w.input, P);
    try {
      await until(() => accounted(w.results, backlog), `${side} ${mode}: the backlog's windows`, 180_000, w.instances);
      const first = Math.min(...w.instances.map((c) => c.first ?? Infinity));
      const spanMs = lastReadAt(w.results, backlog) - first;
      const intakeMs = ((await Promise.race([committed, sleep(30_000)])) ?? NaN) - first;
      if (process.env.BENCH_DEBUG) {
        const reads = w.results.map((r) => r.readAt - first).sort((a, b) => a - b);
        say(`backlog windows read ${reads[0]}…${reads.at(-1)} ms after the first event, offsets in at ${intakeMs} ms`);
      }
      const waitMs = side === 'sluice' && mode === 'debounce' ? GAP_MS : 0;
      const perKey = mode === 'debounce' ? 3 : BATCH;
      const live: Expected = { keys: keysOf('L', LIVE.keys), perKey, mode, batchSize: BATCH };
      await io.sendPaced(k, w.input, { prefix: 'L', keys: LIVE.keys, perKey, perSecond: LIVE.perSecond });
      await until(() => accounted(w.results, live), `${side} ${mode}: the live windows`, 60_000, w.instances);
      await sleep(1_000); // a duplicate has a second to show
      const d = delays(w.results, live, GAP_MS);
      const at = (q: number) => d[Math.min(d.length - 1, Math.floor(q * d.length))]!;
      return {
        rate: (KEYS * PER_KEY) / ((spanMs - waitMs) / 1000),
        intake: (KEYS * PER_KEY) / (intakeMs / 1000),
        spanMs,
        p50Ms: at(0.5),
        p99Ms: at(0.99),
        maxMs: d.at(-1)!,
        backlog: tally(w.results, backlog),
        live: tally(w.results, live),
        load,
      };
    } finally {
      measuring = false;
      await ticks.stop();
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// Kill run: a stream, one of the two instances SIGKILLed halfway

interface Killed {
  readonly tally: Tally;
  /** Kill → the survivor owning every partition, ms. */
  readonly takeoverMs: number;
  /** Kill → every event in a window read, ms (undefined when some never were). */
  readonly settledMs?: number;
}

async function killRun(k: io.Io, side: Side, mode: Mode): Promise<Killed> {
  return withWorld(k, side, mode, async (w) => {
    const expected: Expected = { keys: keysOf('k', KILL.keys), perKey: KILL.perKey, mode, batchSize: BATCH };
    const [victim, survivor] = w.instances as [Instance, Instance];
    const total = KILL.keys * KILL.perKey;
    let killedAt = 0;
    let takeoverAt = 0;
    const watch = setInterval(() => {
      if (killedAt && !takeoverAt && survivor.owned.size === P) takeoverAt = Date.now();
    }, 20);
    const ticks = io.startTicks(k, w.input, P);
    try {
      await io.sendPaced(k, w.input, {
        prefix: 'k',
        ...KILL,
        onSent: (count) => {
          if (killedAt || count < total / 2) return;
          killedAt = Date.now();
          kill(victim);
        },
      });
      const done = () => accounted(w.results, expected);
      await until(done, `${side} ${mode}: every window after the kill`, killedAt + 120_000 - Date.now(), [
        survivor,
      ]).catch((e: Error) => say(e.message));
      await sleep(5_000); // a duplicate has time to show
      return {
        tally: tally(w.results, expected),
        takeoverMs: takeoverAt ? takeoverAt - killedAt : NaN,
        ...(done() ? { settledMs: lastReadAt(w.results, expected) - killedAt } : {}),
      };
    } finally {
      clearInterval(watch);
      await ticks.stop();
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// Output

const ms = (x: number) => (Number.isFinite(x) ? fmt(x) : '–');
const runs = (xs: number[]) => xs.map(ms).join(', ');
const counts = (t: Tally) =>
  `${fmt(t.windows)} of ${fmt(t.expectedWindows)} | ${t.duplicates} | ${t.split} | ${t.lost} | ${t.doubled}`;

const sum = (a: Tally, b: Tally): Tally => ({
  expectedWindows: a.expectedWindows + b.expectedWindows,
  windows: a.windows + b.windows,
  duplicates: a.duplicates + b.duplicates,
  split: a.split + b.split,
  lost: a.lost + b.lost,
  doubled: a.doubled + b.doubled,
});

function measuredTable(mode: Mode, rows: Map<Side, Measured[]>): string {
  const out = [
    `### ${mode === 'debounce' ? `(1) per-key debounce, gap ${fmt(GAP_MS)} ms` : `(2) per-key batches of ${BATCH}`}: ${fmt(KEYS * PER_KEY)} events over ${fmt(KEYS)} keys, ${P} partitions, 2 instances`,
    '',
    '| system | events/s to results (median) | events/s to results (runs) | events/s read, offsets committed (runs) | first event → last backlog window, ms (runs) | delay window end → result p50 / p99 / max, ms (runs) | backlog + live windows: read of due, duplicated, split, lost events, doubled events (runs) |',
    '|---|---:|---:|---:|---:|---|---|',
  ];
  for (const [side, m] of rows) {
    if (!m.length) continue;
    const windows = m.map((x) => counts(sum(x.backlog, x.live)).replaceAll(' | ', ', ')).join('; ');
    out.push(
      `| ${LABEL[side]} | ${fmt(median(m.map((x) => x.rate)))} | ${runs(m.map((x) => x.rate))} | ${runs(m.map((x) => x.intake))} | ${runs(m.map((x) => x.spanMs))} | ${m.map((x) => `${ms(x.p50Ms)} / ${ms(x.p99Ms)} / ${ms(x.maxMs)}`).join('; ')} | ${windows} |`,
    );
  }
  const loads = [...rows.values()].flat().map((x) => x.load.toFixed(1));
  out.push('', `Load average (1 min) at the start of each run: ${loads.join(', ')}.`);
  return out.join('\n');
}

function killTable(mode: Mode, rows: Map<Side, Killed>): string {
  const out = [
    `### ${mode} after a SIGKILL: ${fmt(KILL.keys * KILL.perKey)} events over ${fmt(KILL.keys)} keys at ${fmt(KILL.perSecond)}/s, one of 2 instances killed halfway`,
    '',
    '| system | windows read of due | duplicated | split | lost events | doubled events | kill → survivor owns all, ms | kill → last window read, ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [side, r] of rows)
    out.push(
      `| ${LABEL[side]} | ${counts(r.tally)} | ${ms(r.takeoverMs)} | ${r.settledMs === undefined ? 'never' : ms(r.settledMs)} |`,
    );
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------------------
// Main

function setup(): void {
  if (SIDES.includes('streams')) {
    const why = setupJavaDriver('KafkaStreamsDriver', ['kafka-streams-'], say);
    if (why) throw new Error(`Kafka Streams cannot run here: ${why}`);
  }
  say('building Sluice (tsc -p tsconfig.build.json)');
  const b = sh(process.execPath, [
    path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    'tsconfig.build.json',
  ]);
  if (!b.ok) throw new Error(`build failed:\n${b.out}`);
}

process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });

setup();
const brokers =
  process.env.KAFKA_BROKERS ??
  /KAFKA_BROKERS=(\S+)/.exec(
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/kafka/start.mjs')], { encoding: 'utf8' }),
  )![1]!;
const k = await io.connect(brokers);
say(`kafka at ${brokers}; sides ${SIDES.join(', ')}; modes ${MODES.join(', ')}; load ${os.loadavg()[0]!.toFixed(2)}`);
const tables: string[] = [];
const failures: string[] = [];
/** Runs one measurement; a failure is noted (and printed under the tables) and the run goes on. */
async function attempt<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
  try {
    return await run();
  } catch (e) {
    failures.push(`- ${what}: ${String((e as Error).message ?? e).split('\n')[0]}`);
    say(`${what} failed: ${(e as Error).message}`);
    return undefined;
  }
}
for (const mode of MODES) {
  if (PARTS.includes('measure')) {
    const rows = new Map<Side, Measured[]>(SIDES.map((s) => [s, []]));
    // Rounds alternate which side goes first, so drift in the machine's speed falls on both alike.
    for (let round = 0; round < ROUNDS; round++)
      for (const side of round % 2 ? [...SIDES].reverse() : SIDES) {
        const m = await attempt(`${mode} ${side} round ${round + 1}`, () => measure(k, side, mode));
        if (!m) continue;
        rows.get(side)!.push(m);
        say(
          `${mode} ${side} round ${round + 1}: ${fmt(m.rate)} events/s to results, ${fmt(m.intake)} read (span ${fmt(m.spanMs)} ms), delay p50 ${ms(m.p50Ms)} p99 ${ms(m.p99Ms)} ms, backlog ${JSON.stringify(m.backlog)}, live ${JSON.stringify(m.live)}`,
        );
      }
    tables.push(measuredTable(mode, rows));
  }
  if (PARTS.includes('kill')) {
    const rows = new Map<Side, Killed>();
    for (const side of SIDES) {
      const r = await attempt(`${mode} ${side} kill`, () => killRun(k, side, mode));
      if (!r) continue;
      rows.set(side, r);
      say(`${mode} ${side} kill: ${JSON.stringify(r)}`);
    }
    tables.push(killTable(mode, rows));
  }
}
if (failures.length) tables.push(['Failures:', ...failures].join('\n'));
console.log(`\n${tables.join('\n\n')}\n`);
await k.producer.disconnect();
await k.admin.disconnect();
