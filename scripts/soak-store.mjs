// scripts/soak-store.mjs: a long soak of test/store/crash.test.ts. Again and again on one directory, it spawns
// test/fixtures/store-appender.mjs <dir> <tag> (20 concurrent appenders over 2 shards, 4 KiB segments,
// printing `ack <shard> <lsn> <payload>` once an append is durable), SIGKILLs it after a random number of acks,
// reopens the directory with fileStore and checks: every acknowledged record is present at its LSN, nothing
// is there twice, nothing is there that was never appended, LSNs run from 1 without gaps and durableLsn() is
// the last of them. It stops with exit code 1 on the first violation, printing the iteration, the seed and
// what was wrong (and keeps the directory for a look).
//
// It imports the store from ../dist/index.js, as the child does: build first (`npm run build`);
// `npm run soak:store` builds and then runs it.
//
//   npm run soak:store                                   # 2,000 iterations, a random seed (printed)
//   npm run soak:store -- --iterations 300 --seed 11
//   node scripts/soak-store.mjs --iterations 5000 --early-kill-rate 0.1 --dir /tmp/soak --keep
//
// Options: --iterations N (2000); --seed S (random); --max-acks N (120: a kill after 1..N acks, as the test);
// --early-kill-rate P (0: as the test; with P > 0 that share of the children is instead killed a random
// 50-300 ms after spawn, around the child's start, open() and recovery: a child reaches `open` after about
// 140-230 ms on a 2-core machine); --dir D (a new temp directory); --keep (keep
// the directory after a clean run).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const distIndex = path.join(root, 'dist', 'index.js');
const fixture = path.join(root, 'test', 'fixtures', 'store-appender.mjs');
if (!existsSync(distIndex)) {
  console.error(
    'soak-store: dist/index.js is missing; run `npm run build` first (or `npm run soak:store`, which builds).',
  );
  process.exit(2);
}
const { fileStore } = await import(distIndex);

// Options.
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const value = args[i + 1];
  if (value === undefined || value.startsWith('--')) usage(`--${name} needs a value`);
  return value;
};
function usage(message) {
  console.error(
    `soak-store: ${message}\nusage: node scripts/soak-store.mjs [--iterations N] [--seed S] [--max-acks N] [--early-kill-rate P] [--dir D] [--keep]`,
  );
  process.exit(2);
}
const known = new Set(['--iterations', '--seed', '--max-acks', '--early-kill-rate', '--dir', '--keep']);
for (const a of args) if (a.startsWith('--') && !known.has(a)) usage(`unknown option ${a}`);
const ITERATIONS = Number(option('iterations', 2000));
const SEED = Number(option('seed', Math.floor(Math.random() * 2 ** 31)));
const MAX_ACKS = Number(option('max-acks', 120));
const EARLY_KILL_RATE = Number(option('early-kill-rate', 0));
const KEEP = args.includes('--keep');
if (!Number.isInteger(ITERATIONS) || ITERATIONS < 1) usage('--iterations must be a positive integer');
if (!Number.isInteger(SEED)) usage('--seed must be an integer');
if (!Number.isInteger(MAX_ACKS) || MAX_ACKS < 1) usage('--max-acks must be a positive integer');
if (!(EARLY_KILL_RATE >= 0 && EARLY_KILL_RATE <= 1)) usage('--early-kill-rate must be within 0..1');
const givenDir = option('dir', undefined);
const dir = givenDir ? path.resolve(givenDir) : mkdtempSync(path.join(os.tmpdir(), 'sluice-soak-'));
if (givenDir) mkdirSync(dir, { recursive: true });

// As the fixture opens it.
const SHARDS = 2;
const SEGMENT_BYTES = 32768;
/** A child that neither acknowledges enough nor dies within this long is a violation too (a hang). */
const CHILD_TIMEOUT_MS = 60_000;

/** mulberry32, as test/helpers.ts `seeded`. */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Violation extends Error {}

/**
 * Runs the child until it has acknowledged `acks` appends (or, with `afterMs`, for that long), SIGKILLs it and
 * returns what it acknowledged (`shard/lsn` → payload).
 */
function runAndKill(tag, acks, afterMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fixture, dir, tag], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const acked = new Map();
    let buffer = '';
    let stderr = '';
    let killed = false;
    let problem;
    const kill = () => {
      if (killed) return;
      killed = true;
      child.kill('SIGKILL');
    };
    const timer = afterMs === undefined ? undefined : setTimeout(kill, afterMs);
    const hang = setTimeout(() => {
      problem = `the child made ${acked.size} of ${acks} acks in ${CHILD_TIMEOUT_MS} ms (a hang?)`;
      kill();
    }, CHILD_TIMEOUT_MS);
    child.stderr.on('data', (d) => (stderr += d.toString()));
    child.stdout.on('data', (d) => {
      buffer += d.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop();
      for (const line of lines) {
        const [word, shard, lsn, payload] = line.split(' ');
        if (word === 'ack') {
          const at = `${shard}/${lsn}`;
          if (acked.has(at) && problem === undefined)
            problem = `the child acknowledged ${at} twice: ${acked.get(at)} and ${payload}`;
          acked.set(at, payload);
        }
        if (afterMs === undefined && acked.size >= acks) kill();
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(hang);
      if (problem !== undefined) reject(new Violation(`${problem}\nchild stderr:\n${stderr}`));
      else if (signal === 'SIGKILL') resolve(acked);
      else
        reject(
          new Violation(
            `the child exited by itself (code ${code}, signal ${signal}) after ${acked.size} acks\nchild stderr:\n${stderr}`,
          ),
        );
    });
  });
}

/** Reopens the directory and checks it against everything ever acknowledged; returns the records per shard. */
async function check(everAcked, iteration) {
  const store = fileStore({ dir, shards: SHARDS, segmentBytes: SEGMENT_BYTES });
  try {
    await store.open(); // recovers; takes over the dead child's lock
  } catch (error) {
    throw new Violation(`reopening failed: ${error?.stack ?? error}`);
  }
  const counts = [];
  try {
    const seen = new Map(); // payload → shard/lsn
    for (let shard = 0; shard < SHARDS; shard++) {
      let expected = 1;
      await store.log(shard).replay(1, (lsn, record) => {
        const at = `${shard}/${lsn}`;
        if (lsn !== expected)
          throw new Violation(`shard ${shard}: LSN ${lsn} where ${expected} was expected (a gap or disorder)`);
        expected++;
        const payload = Buffer.from(record).toString();
        const m = /^r(\d+):\d+:\d+$/.exec(payload);
        if (!m || Number(m[1]) > iteration)
          throw new Violation(`${at} holds ${JSON.stringify(payload)}, which was never appended`);
        if (seen.has(payload))
          throw new Violation(`${JSON.stringify(payload)} is there twice: at ${seen.get(payload)} and at ${at}`);
        seen.set(payload, at);
        const ack = everAcked.get(at);
        if (ack !== undefined && ack !== payload)
          throw new Violation(`${at} holds ${payload}, but ${ack} was acknowledged at that LSN`);
      });
      const durable = store.log(shard).durableLsn();
      if (durable !== expected - 1)
        throw new Violation(`shard ${shard}: durableLsn() is ${durable}, replay ended at ${expected - 1}`);
      counts.push(expected - 1);
    }
    for (const [at, payload] of everAcked) {
      if (!seen.has(payload)) throw new Violation(`acknowledged record ${at} ${payload} was lost`);
    }
  } catch (error) {
    if (error instanceof Violation) throw error;
    throw new Violation(`replay failed: ${error?.stack ?? error}`);
  } finally {
    await store.close().catch(() => {});
  }
  return counts;
}

const segmentCount = () => {
  let n = 0;
  for (let s = 0; s < SHARDS; s++) {
    const d = path.join(dir, `shard-${s}`);
    if (existsSync(d)) n += readdirSync(d).filter((f) => f.endsWith('.seg')).length;
  }
  return n;
};

console.log(
  `soak-store: ${ITERATIONS} iterations, seed ${SEED}, max acks ${MAX_ACKS}, early-kill rate ${EARLY_KILL_RATE}, dir ${dir}, node ${process.version}`,
);
const random = seeded(SEED);
const everAcked = new Map();
const started = performance.now();
let earlyKills = 0;
let i = 0;
let lastCounts = [0, 0];
try {
  for (; i < ITERATIONS; i++) {
    const early = EARLY_KILL_RATE > 0 && random() < EARLY_KILL_RATE;
    const acks = 1 + Math.floor(random() * MAX_ACKS);
    const afterMs = early ? 50 + Math.floor(random() * 250) : undefined;
    if (early) earlyKills++;
    const acked = await runAndKill(`r${i}`, acks, afterMs);
    for (const [at, payload] of acked) everAcked.set(at, payload);
    lastCounts = await check(everAcked, i);
    if ((i + 1) % 100 === 0 || i + 1 === ITERATIONS) {
      const s = (performance.now() - started) / 1000;
      console.log(
        `  ${i + 1}/${ITERATIONS} ok in ${s.toFixed(1)} s: ${everAcked.size} acknowledged records, ${lastCounts.join(' + ')} in the log, ${segmentCount()} segments` +
          (EARLY_KILL_RATE > 0 ? `, ${earlyKills} early kills` : ''),
      );
    }
  }
} catch (error) {
  console.error(
    `\nsoak-store: VIOLATION at iteration ${i} (tag r${i}), seed ${SEED}${EARLY_KILL_RATE > 0 ? `, early-kill rate ${EARLY_KILL_RATE}` : ''}:`,
  );
  console.error(error instanceof Violation ? error.message : (error?.stack ?? error));
  console.error(`the directory is kept: ${dir}`);
  console.error(
    `rerun: node scripts/soak-store.mjs --iterations ${ITERATIONS} --seed ${SEED} --max-acks ${MAX_ACKS} --early-kill-rate ${EARLY_KILL_RATE}`,
  );
  process.exit(1);
}
console.log(
  `soak-store: ${ITERATIONS} iterations without a violation in ${((performance.now() - started) / 1000).toFixed(1)} s (seed ${SEED})`,
);
if (!KEEP && !givenDir) rmSync(dir, { recursive: true, force: true });
