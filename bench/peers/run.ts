/**
 * bench/peers: Sluice beside what a team would pick instead, on one Kafka broker in one run.
 *
 *   npm run bench:peers
 *
 * Systems: raw kafkajs, NestJS microservices (Kafka transport), FastStream (aiokafka, max_workers),
 * Confluent Parallel Consumer (KEY ordering) and Sluice (App + KafkaBroker from dist/). Each runs as its own
 * child process, a small driver of ours in drivers/, which reads PEER_SPEC and prints one JSON line.
 * Peers are installed into ${SLUICE_CACHE:-~/.cache/sluice}/peers (npm, a Python venv, Maven jars), never
 * into the repository. Workloads:
 *  (a) no-op handler, 200,000 messages over 3 partitions;
 *  (b) handler awaiting 5 ms, one partition, 20,000 messages over 1,000 keys, concurrency 100 where the
 *      system has a setting for it;
 *  (c) as (b) with per-key order required (each system in its order-keeping configuration).
 * Per system and workload, in measured runs: throughput over a backlog (the topic filled first), p50/p99
 * latency from the producer's timestamp to the handler over a slow live tail sent after the backlog, peak
 * RSS of the consumer process, per-key order violations; in a restart run: messages lost / duplicated across
 * a graceful stop halfway and a restart on the same group. Fresh topic and group per run.
 *
 * Writes docs/peers-<workload>.svg and docs/peers-results.md, prints the tables. Environment:
 * BENCH_PEERS_ROUNDS (measured runs per system and workload, default 2), BENCH_PEERS_ONLY (comma-separated
 * systems), BENCH_PEERS_WORKLOADS (e.g. "b,c"), BENCH_PEERS_SERIAL_N (messages for a system that handles
 * one partition one message at a time, default 2,000), BENCH_PEERS_TIMEOUT_MS (per child, default 240,000),
 * BENCH_PEERS_SCALE (fraction of every message count, for a smoke run), KAFKA_BROKERS (else scripts/kafka/start.mjs).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { CACHE, ROOT, driver, javaCommand, setupJavaDriver, sh } from './setup.js';

const DOCS = path.join(ROOT, 'docs');
const ROUNDS = Number(process.env.BENCH_PEERS_ROUNDS ?? 2);
const SERIAL_N = Number(process.env.BENCH_PEERS_SERIAL_N ?? 2_000);
const TIMEOUT_MS = Number(process.env.BENCH_PEERS_TIMEOUT_MS ?? 240_000);
const KEYS = 1_000;
const NEST_VERSION = '12.1.1';
const FASTSTREAM_VERSION = '0.7.8';

const say = (msg: string): void => void process.stderr.write(`[peers] ${msg}\n`);

// ---------------------------------------------------------------------------------------------------------
// Workloads and systems

interface Workload {
  readonly id: 'a' | 'b' | 'c';
  readonly title: string;
  readonly n: number;
  readonly partitions: number;
  readonly sleepMs: number;
  readonly concurrency: number;
  readonly ordered: boolean;
  /** The latency tail: messages sent at tailPerSecond once the backlog is handled. */
  readonly tail: number;
  readonly tailPerSecond: number;
}
const WORKLOADS: readonly Workload[] = [
  {
    id: 'a',
    title: '(a) no-op handler, 200,000 messages, 3 partitions',
    n: 200_000,
    partitions: 3,
    sleepMs: 0,
    concurrency: 16,
    ordered: false,
    tail: 2_000,
    tailPerSecond: 500,
  },
  {
    id: 'b',
    title: '(b) handler awaits 5 ms, 1 partition, 20,000 messages over 1,000 keys, concurrency 100',
    n: 20_000,
    partitions: 1,
    sleepMs: 5,
    concurrency: 100,
    ordered: false,
    tail: 300,
    tailPerSecond: 50,
  },
  {
    id: 'c',
    title: '(c) as (b), per-key order required',
    n: 20_000,
    partitions: 1,
    sleepMs: 5,
    concurrency: 100,
    ordered: true,
    tail: 300,
    tailPerSecond: 50,
  },
];

interface System {
  readonly id: string;
  readonly label: string;
  /** The configuration used per workload, as the table states it. */
  setting(w: Workload): string;
  /** True when the system handles a partition one message at a time in this workload (it gets SERIAL_N). */
  serial(w: Workload): boolean;
  command(): { cmd: string; args: string[]; env?: Record<string, string> };
  /** Why it cannot run, once setup has been tried; undefined when it can. */
  unavailable?: string;
}

const SYSTEMS: System[] = [
  {
    id: 'kafkajs',
    label: 'raw kafkajs 2.2.4',
    setting: (w) =>
      w.sleepMs === 0
        ? `eachBatch, ${w.partitions} partitions concurrently`
        : 'eachMessage (no concurrency setting inside a partition)',
    serial: (w) => w.sleepMs > 0,
    command: () => ({ cmd: process.execPath, args: [driver('kafkajs.mjs')] }),
  },
  {
    id: 'nestjs',
    label: `NestJS ${NEST_VERSION} (Kafka transport)`,
    setting: (w) => `@EventPattern, partitionsConsumedConcurrently ${w.partitions}`,
    serial: (w) => w.sleepMs > 0,
    command: () => ({
      cmd: process.execPath,
      args: [driver('nestjs.mjs')],
      env: { PEER_NEST_MODULES: path.join(CACHE, 'npm', 'node_modules') },
    }),
  },
  {
    id: 'faststream',
    label: `FastStream ${FASTSTREAM_VERSION} (aiokafka)`,
    setting: (w) =>
      w.ordered
        ? `max_workers=${w.concurrency}, AckPolicy.ACK (ordered: concurrency across partitions only)`
        : `max_workers=${w.concurrency} (ACK_FIRST)`,
    serial: (w) => w.ordered && w.partitions === 1,
    command: () => ({ cmd: path.join(CACHE, 'venv', 'bin', 'python'), args: [driver('faststream_driver.py')] }),
  },
  {
    id: 'parallel-consumer',
    label: 'Confluent Parallel Consumer 0.5.3.2',
    setting: (w) => `KEY ordering, maxConcurrency ${w.concurrency}`,
    serial: () => false,
    command: () => javaCommand('ParallelConsumerDriver'),
  },
  {
    id: 'sluice',
    label: 'Sluice (dist/)',
    setting: (w) => (w.ordered ? `workersByKey(${w.concurrency})` : `workers(${w.concurrency})`),
    serial: () => false,
    command: () => ({ cmd: process.execPath, args: [driver('sluice.mjs')] }),
  },
];

// ---------------------------------------------------------------------------------------------------------
// Setup: peers into the cache, Sluice built, the broker up

function setupNest(): string | undefined {
  const dir = path.join(CACHE, 'npm');
  if (fs.existsSync(path.join(dir, 'node_modules', '@nestjs', 'microservices', 'package.json'))) return undefined;
  say(`installing NestJS ${NEST_VERSION} into ${dir} (npm)`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "name": "sluice-bench-peers", "private": true }\n');
  const r = sh('npm', [
    'install',
    '--prefix',
    dir,
    '--no-audit',
    '--no-fund',
    `@nestjs/microservices@${NEST_VERSION}`,
    `@nestjs/core@${NEST_VERSION}`,
    `@nestjs/common@${NEST_VERSION}`,
    'reflect-metadata@0.2.2',
    'rxjs@7',
    'kafkajs@2.2.4',
  ]);
  return r.ok ? undefined : `npm install of @nestjs/microservices@${NEST_VERSION} failed:\n${r.out}`;
}

function setupFastStream(): string | undefined {
  const venv = path.join(CACHE, 'venv');
  const py = path.join(venv, 'bin', 'python');
  if (fs.existsSync(py) && sh(py, ['-c', 'import faststream.kafka']).ok) return undefined;
  say(`installing FastStream ${FASTSTREAM_VERSION} (kafka extra) into ${venv} (venv + pip)`);
  const v = sh('python3', ['-m', 'venv', venv]);
  if (!v.ok) return `python3 -m venv failed:\n${v.out}`;
  const r = sh(path.join(venv, 'bin', 'pip'), ['install', '-q', `faststream[kafka]==${FASTSTREAM_VERSION}`]);
  return r.ok ? undefined : `pip install faststream[kafka]==${FASTSTREAM_VERSION} failed:\n${r.out}`;
}

const setupParallelConsumer = (): string | undefined =>
  setupJavaDriver('ParallelConsumerDriver', ['parallel-consumer-core'], say);

function setup(): void {
  const steps: Record<string, () => string | undefined> = {
    nestjs: setupNest,
    faststream: setupFastStream,
    'parallel-consumer': setupParallelConsumer,
  };
  for (const s of SYSTEMS) {
    const step = steps[s.id];
    if (!step) continue;
    try {
      s.unavailable = step();
    } catch (e) {
      s.unavailable = String(e);
    }
    if (s.unavailable) say(`${s.label} cannot run here: ${s.unavailable}`);
  }
  say('building Sluice (tsc -p tsconfig.build.json)');
  const b = sh(process.execPath, [
    path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    'tsconfig.build.json',
  ]);
  if (!b.ok) {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'index.js'))) {
      SYSTEMS.find((s) => s.id === 'sluice')!.unavailable = `build failed:\n${b.out}`;
    } else say(`build failed, using the dist/ already there:\n${b.out}`);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Children: one driver per run, killed with its process group on timeout or exit

const live = new Set<ChildProcess>();
function killAll(): void {
  for (const c of live) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });

interface DriverResult {
  system: string;
  handled: number;
  distinct: number;
  violations: number;
  rate: number;
  p50Ms: number | null;
  p99Ms: number | null;
  peakRssKb: number;
  ids?: number[];
}

interface Spec {
  brokers: string[];
  topic: string;
  group: string;
  n: number;
  tail: number;
  keys: number;
  partitions: number;
  sleepMs: number;
  concurrency: number;
  ordered: boolean;
  mode: 'measure' | 'stopAt' | 'drain';
  stopAt?: number;
  idleMs?: number;
  firstWaitMs?: number;
}

/**
 * Starts a driver; `ready` resolves on its {"ready":true} line, `backlog` on {"backlog":true}, `result` on its
 * result line (or rejects; the other two then resolve, so a waiter sees the failure through `result`).
 */
function startDriver(
  system: System,
  spec: Spec,
): { ready: Promise<void>; backlog: Promise<void>; result: Promise<DriverResult> } {
  const { cmd, args, env } = system.command();
  const child = spawn(cmd, args, {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, PEER_SPEC: JSON.stringify(spec) },
  });
  live.add(child);
  let stdout = '';
  let stderr = '';
  let onReady!: () => void;
  let onBacklog!: () => void;
  const ready = new Promise<void>((r) => (onReady = r));
  const backlog = new Promise<void>((r) => (onBacklog = r));
  const result = new Promise<DriverResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      reject(
        new Error(
          `${system.id}: no result after ${TIMEOUT_MS / 1000} s (killed); stderr tail:\n${stderr.slice(-1500)}`,
        ),
      );
    }, TIMEOUT_MS);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
      if (stdout.length < 4_096) {
        // the markers come first; the result line may be megabytes of IDs
        if (stdout.includes('{"ready":true}')) onReady();
        if (stdout.includes('{"backlog":true}')) onBacklog();
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-20_000);
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      live.delete(child);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      live.delete(child);
      const line = stdout
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{') && l.includes('"handled":'));
      let parsed: DriverResult | undefined;
      try {
        parsed = line ? (JSON.parse(line) as DriverResult) : undefined;
      } catch {
        /* cut short */
      }
      if (parsed) resolve(parsed);
      else reject(new Error(`${system.id}: exited ${code} without a result; stderr tail:\n${stderr.slice(-1500)}`));
    });
  });
  result.catch(() => {
    onReady();
    onBacklog();
  });
  return { ready, backlog, result };
}

// ---------------------------------------------------------------------------------------------------------
// Kafka: topics and the workload's messages

const brokers =
  process.env.KAFKA_BROKERS ??
  /KAFKA_BROKERS=(\S+)/.exec(
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/kafka/start.mjs')], { encoding: 'utf8' }),
  )![1]!;
const kafka = new Kafka({ clientId: 'bench-peers', brokers: [brokers], logLevel: logLevel.NOTHING });
const admin = kafka.admin();
const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false });

async function createTopic(topic: string, partitions: number): Promise<void> {
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
  });
}

/**
 * Sends IDs from..to (key k<id mod 1000>, value {"id","seq","ts"}), one send at a time (so each key's
 * messages reach the broker in order), stamping ts when a send is built: as fast as kafkajs goes in sends of
 * 2,000, or paced at `perSecond` in sends of a hundredth of that. `seq` holds each key's next sequence number.
 */
async function produce(topic: string, from: number, to: number, seq: Int32Array, perSecond?: number): Promise<void> {
  const step = perSecond ? Math.max(1, Math.round(perSecond / 100)) : 2_000;
  const t0 = performance.now();
  for (let i = from; i < to; i += step) {
    if (perSecond) {
      const due = t0 + ((i - from) / perSecond) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const ts = Date.now();
    const messages = [];
    for (let id = i; id < Math.min(to, i + step); id++) {
      const k = id % KEYS;
      messages.push({ key: `k${k}`, value: `{"id":${id},"seq":${seq[k]!++},"ts":${ts}}` });
    }
    await producer.send({ topic, acks: 1, messages });
  }
}

// ---------------------------------------------------------------------------------------------------------
// Runs

interface Measured {
  rate: number;
  p50Ms: number | null;
  p99Ms: number | null;
  peakRssMb: number;
  violations: number;
  n: number;
  load: number;
}
interface Restarted {
  lost: number;
  duplicated: number;
  firstHalf: number;
  secondHalf: number;
  n: number;
}
interface Row {
  system: System;
  measured: Measured[];
  restart?: Restarted;
  errors: string[];
}

let runNo = 0;
const stamp = Date.now().toString(36);
const names = (w: Workload, s: System, kind: string) => {
  const base = `peers-${stamp}-${w.id}-${s.id}-${kind}-${++runNo}`;
  return { topic: base, group: `${base}-g` };
};
const specFor = (w: Workload, s: System, n: number, topic: string, group: string): Spec => ({
  brokers: [brokers],
  topic,
  group,
  n,
  tail: 0,
  keys: KEYS,
  partitions: w.partitions,
  sleepMs: w.sleepMs,
  concurrency: w.concurrency,
  ordered: w.ordered,
  mode: 'measure',
});
const SCALE = Number(process.env.BENCH_PEERS_SCALE ?? 1); // < 1 for a quick smoke run
const nFor = (w: Workload, s: System) =>
  Math.max(10, Math.round(SCALE * (s.serial(w) ? Math.min(SERIAL_N, w.n) : w.n)));

/**
 * Throughput: the topic is filled with n messages first, then the consumer starts and the rate is taken from
 * its first to its last backlog message. Latency: once the backlog is handled, a tail is sent at a slow fixed
 * rate (below every system's capacity), so it measures the path, not a queue. The driver stops after both.
 */
async function measure(w: Workload, s: System): Promise<Measured> {
  const n = nFor(w, s);
  const { topic, group } = names(w, s, 'm');
  await createTopic(topic, w.partitions);
  const seq = new Int32Array(KEYS);
  await produce(topic, 0, n, seq);
  const load = os.loadavg()[0]!;
  const d = startDriver(s, { ...specFor(w, s, n, topic, group), tail: w.tail });
  await d.backlog;
  await produce(topic, n, n + w.tail, seq, w.tailPerSecond).catch(() => undefined);
  const r = await d.result;
  if (r.handled !== n + w.tail) throw new Error(`${s.id}: handled ${r.handled} of ${n + w.tail}`);
  return {
    rate: r.rate,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    peakRssMb: r.peakRssKb / 1024,
    violations: r.violations,
    n,
    load,
  };
}

/** Topic filled first; a driver stops gracefully after n/2, then a new one drains the rest on the same group. */
async function restart(w: Workload, s: System): Promise<Restarted> {
  const n = nFor(w, s);
  const { topic, group } = names(w, s, 'r');
  await createTopic(topic, w.partitions);
  await produce(topic, 0, n, new Int32Array(KEYS));
  const base = specFor(w, s, n, topic, group);
  const first = await startDriver(s, { ...base, mode: 'stopAt', stopAt: Math.floor(n / 2) }).result;
  const second = await startDriver(s, { ...base, mode: 'drain', idleMs: 4_000, firstWaitMs: 60_000 }).result;
  const ids = [...(first.ids ?? []), ...(second.ids ?? [])];
  const seen = new Set(ids);
  return {
    lost: n - seen.size,
    duplicated: ids.length - seen.size,
    firstHalf: first.handled,
    secondHalf: second.handled,
    n,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Output: tables, SVG

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN;
};
const int = (x: number) => Math.round(x).toLocaleString('en');
const range = (xs: number[], f: (x: number) => string) =>
  xs.length > 1 ? `${f(Math.min(...xs))}–${f(Math.max(...xs))}` : xs.length ? f(xs[0]!) : '';
const ms = (x: number | null) => (x === null ? '–' : x < 10 ? x.toFixed(1) : int(x));

function table(w: Workload, rows: Row[]): string {
  const out = [
    `### ${w.title}`,
    '',
    '| system | setting | messages | msgs/s (median) | msgs/s (runs) | p50 ms | p99 ms | peak RSS MB | order violations | lost / duplicated after restart |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const m = r.measured;
    if (r.system.unavailable) {
      out.push(`| ${r.system.label} | not run: ${r.system.unavailable.split('\n')[0]} | | | | | | | | |`);
      continue;
    }
    const restart = r.restart ? `${int(r.restart.lost)} / ${int(r.restart.duplicated)}` : 'failed';
    out.push(
      `| ${r.system.label} | ${r.system.setting(w)} | ${m.length ? int(m[0]!.n) : ''} | ${m.length ? int(median(m.map((x) => x.rate))) : 'failed'} | ${range(
        m.map((x) => x.rate),
        int,
      )} | ${range(
        m.map((x) => x.p50Ms ?? NaN),
        ms,
      )} | ${range(
        m.map((x) => x.p99Ms ?? NaN),
        ms,
      )} | ${range(
        m.map((x) => x.peakRssMb),
        int,
      )} | ${m.map((x) => x.violations).join(', ')} | ${restart} |`,
    );
  }
  const loads = rows.flatMap((r) => r.measured.map((m) => m.load));
  out.push(
    '',
    `Latency: a tail of ${int(w.tail)} messages sent at ${int(w.tailPerSecond)}/s once the backlog was handled. Load average (1 min) at the start of the measured runs: ${range(loads, (x) => x.toFixed(1))}.`,
  );
  const errors = rows.flatMap((r) => r.errors.map((e) => `- ${r.system.label}: ${e.split('\n')[0]}`));
  if (errors.length) out.push('', 'Failures:', ...errors);
  return out.join('\n');
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Horizontal bars: median msgs/s per system, with p50/p99 and RSS beside each bar. */
function svg(w: Workload, rows: Row[]): string {
  const bars = rows
    .filter((r) => r.measured.length)
    .map((r) => ({
      label: r.system.label,
      rate: median(r.measured.map((m) => m.rate)),
      note: `p50 ${ms(median(r.measured.map((m) => m.p50Ms ?? NaN)))} ms · p99 ${ms(median(r.measured.map((m) => m.p99Ms ?? NaN)))} ms · ${int(median(r.measured.map((m) => m.peakRssMb)))} MB`,
      sluice: r.system.id === 'sluice',
    }));
  const max = Math.max(1, ...bars.map((b) => b.rate));
  const left = 250,
    width = 420,
    barH = 26,
    gap = 14,
    top = 44;
  const height = top + bars.length * (barH + gap) + 24;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 260}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${esc(w.title)}</text>`,
    `<text x="10" y="36" fill="#555">messages/s handled (median of runs); latency produce → handler; peak RSS</text>`,
  ];
  bars.forEach((b, i) => {
    const y = top + i * (barH + gap);
    const len = Math.max(1, (b.rate / max) * width);
    parts.push(
      `<text x="${left - 8}" y="${y + barH / 2 + 4}" text-anchor="end">${esc(b.label)}</text>`,
      `<rect x="${left}" y="${y}" width="${len.toFixed(1)}" height="${barH}" fill="${b.sluice ? '#2b7bb9' : '#9aa5b1'}"/>`,
      `<text x="${left + len + 6}" y="${y + 11}" font-weight="bold">${int(b.rate)}/s</text>`,
      `<text x="${left + len + 6}" y="${y + 24}" fill="#555" font-size="10">${esc(b.note)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}

// ---------------------------------------------------------------------------------------------------------
// Main

setup();
await admin.connect();
await producer.connect();
const only = process.env.BENCH_PEERS_ONLY?.split(',');
const systems = SYSTEMS.filter((s) => !only || only.includes(s.id));
const workloads = WORKLOADS.filter(
  (w) => !process.env.BENCH_PEERS_WORKLOADS || process.env.BENCH_PEERS_WORKLOADS.split(',').includes(w.id),
);
say(
  `kafka at ${brokers}; ${ROUNDS} measured run(s) per system and workload, then one restart run; load ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);

const sections: string[] = [];
for (const w of workloads) {
  const rows: Row[] = systems.map((system) => ({ system, measured: [], errors: [] }));
  // Rounds alternate the systems, so drift in the machine's speed falls on all of them alike.
  for (let round = 0; round < ROUNDS; round++) {
    for (const row of rows) {
      if (row.system.unavailable) continue;
      try {
        const m = await measure(w, row.system);
        row.measured.push(m);
        say(
          `${w.id} ${row.system.id} round ${round + 1}: ${int(m.rate)}/s p50 ${ms(m.p50Ms)} p99 ${ms(m.p99Ms)} ms rss ${int(m.peakRssMb)} MB violations ${m.violations} (load ${m.load.toFixed(1)})`,
        );
      } catch (e) {
        row.errors.push(String((e as Error).message ?? e));
        say(`${w.id} ${row.system.id} round ${round + 1} failed: ${(e as Error).message}`);
      }
    }
  }
  for (const row of rows) {
    if (row.system.unavailable) continue;
    try {
      row.restart = await restart(w, row.system);
      say(
        `${w.id} ${row.system.id} restart: lost ${row.restart.lost}, duplicated ${row.restart.duplicated} (handled ${row.restart.firstHalf} + ${row.restart.secondHalf} of ${row.restart.n})`,
      );
    } catch (e) {
      row.errors.push(`restart: ${String((e as Error).message ?? e)}`);
      say(`${w.id} ${row.system.id} restart failed: ${(e as Error).message}`);
    }
  }
  const text = table(w, rows);
  sections.push(text);
  console.log(`\n${text}\n`);
  fs.writeFileSync(path.join(DOCS, `peers-${w.id}.svg`), `${svg(w, rows)}\n`);
}

const header = [
  '# bench/peers results',
  '',
  `Written by \`npm run bench:peers\` on ${new Date().toISOString().slice(0, 10)}: Node.js ${process.version}, ${os.cpus().length} cores, Kafka at ${brokers}.`,
  `Messages for a system that handles one partition one message at a time: ${SERIAL_N.toLocaleString('en')} (it would take minutes for 20,000).`,
  '',
];
if (!only && !process.env.BENCH_PEERS_WORKLOADS && SCALE === 1)
  fs.writeFileSync(path.join(DOCS, 'peers-results.md'), `${header.join('\n')}${sections.join('\n\n')}\n`);
await producer.disconnect();
await admin.disconnect();
killAll();
