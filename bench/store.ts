/**
 * bench/store: the file store against hand-written baselines of the same shape, in one run, in a temp
 * directory under os.tmpdir() (removed at the end):
 *  (a) durable appends/s through `fileStore({ dir, shards: 1 }).log(0).append(record)` with 1, 10, 100 and
 *      1,000 concurrent appenders, each looping `await append(100-byte record)` for a fixed wall time; beside
 *      a raw group commit of the same shape: the same appenders hand ready-made frames of the same size
 *      (116 bytes) to a minimal group commit over a plain file (fs.promises FileHandle: the frames pending
 *      while a write + fdatasync is under way share the next write + fdatasync). Fresh files for every
 *      measurement.
 *  (b) replay records/s over 500,000 records of 100 bytes (written first with 1,000 appenders): `open()`
 *      (recovery checks every frame) and `log.replay(1, visit)`, beside a raw scan of the same segment files
 *      that reads each file and computes crc32c over each frame (length from the header; the same CRC work
 *      without Sluice's checks or per-record objects). The files are in the page cache for both.
 * Rounds alternate raw and Sluice; the figure is the median of the ratios measured in the same round
 * (machines drift; ratios measured side by side drift less). Targets: Sluice at least 50% of raw.
 *
 *   npm run bench:store
 *   BENCH_SECONDS=2 BENCH_ROUNDS=7 BENCH_REPLAY_N=1000000 npm run bench:store
 */
import { crc32c } from '@node-rs/crc32';
import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileStore } from '../src/index.js';
import { drive, fmt, median, range } from './stats.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1.5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REPLAY_N = Number(process.env.BENCH_REPLAY_N ?? 500_000);
const REPLAY_ROUNDS = Number(process.env.BENCH_REPLAY_ROUNDS ?? 5);
const CONCURRENCY = [1, 10, 100, 1_000];
const RECORD_BYTES = 100;
const HEADER_BYTES = 16; // [len u32][crc32c u32][lsn u64], as src/store/frame.ts
const SEGMENT_HEADER_BYTES = 16; // the segment's own header before its first frame, as src/store/segments.ts
const TARGET = 0.5;

const RECORD = Buffer.alloc(RECORD_BYTES, 'x');
/** The raw side's frame: the same bytes on disk as Sluice's (a valid frame for LSN 1), made once. */
const FRAME = (() => {
  const f = Buffer.alloc(HEADER_BYTES + RECORD_BYTES);
  f.writeUInt32LE(RECORD_BYTES, 0);
  f.writeUInt32LE(1, 8);
  RECORD.copy(f, HEADER_BYTES);
  f.writeUInt32LE(crc32c(f.subarray(8)), 4);
  return f;
})();

const root = await fs.mkdtemp(path.join(os.tmpdir(), 'sluice-bench-store-'));
let dirs = 0;
const freshDir = (): string => path.join(root, `d${dirs++}`);

/** The baseline: the smallest group commit one would write by hand over a plain file. */
class RawGroupCommit {
  private pending: { frame: Buffer; resolve: () => void }[] = [];
  private flushing = false;
  groups = 0;
  records = 0;

  constructor(private readonly handle: FileHandle) {}

  append(frame: Buffer): Promise<void> {
    return new Promise((resolve) => {
      this.pending.push({ frame, resolve });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      const bytes = batch.length === 1 ? batch[0]!.frame : Buffer.concat(batch.map((p) => p.frame));
      for (let done = 0; done < bytes.length;)
        done += (await this.handle.write(bytes, done, bytes.length - done)).bytesWritten;
      await this.handle.datasync();
      this.groups++;
      this.records += batch.length;
      for (const p of batch) p.resolve();
    }
    this.flushing = false;
  }
}

async function rawAppends(concurrency: number): Promise<{ rate: number; perSync: number }> {
  const dir = freshDir();
  await fs.mkdir(dir);
  const handle = await fs.open(path.join(dir, 'raw.log'), 'a');
  const raw = new RawGroupCommit(handle);
  const { rate } = await drive(SECONDS, concurrency, () => raw.append(FRAME));
  await handle.close();
  await fs.rm(dir, { recursive: true });
  return { rate, perSync: raw.records / raw.groups };
}

async function sluiceAppends(concurrency: number): Promise<number> {
  const dir = freshDir();
  const store = fileStore({ dir, shards: 1 });
  await store.open();
  const log = store.log(0);
  const { rate, count } = await drive(SECONDS, concurrency, () => log.append(RECORD));
  if (log.durableLsn() !== count) throw new Error(`durableLsn ${log.durableLsn()} after ${count} appends`);
  await store.close();
  await fs.rm(dir, { recursive: true });
  return rate;
}

async function partA(): Promise<void> {
  const raw = new Map<number, number[]>();
  const sluice = new Map<number, number[]>();
  const ratios = new Map<number, number[]>();
  const perSync = new Map<number, number[]>();
  const push = (m: Map<number, number[]>, k: number, v: number): void => void m.set(k, [...(m.get(k) ?? []), v]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of CONCURRENCY) {
      let r: { rate: number; perSync: number };
      let s: number;
      if (round % 2 === 0) {
        r = await rawAppends(c);
        s = await sluiceAppends(c);
      } else {
        s = await sluiceAppends(c);
        r = await rawAppends(c);
      }
      push(raw, c, r.rate);
      push(perSync, c, r.perSync);
      push(sluice, c, s);
      push(ratios, c, s / r.rate);
    }
  }
  console.log(
    `\n### (a) durable appends/s, ${RECORD_BYTES}-byte records, ${SECONDS} s per measurement, median of ${ROUNDS} rounds\n`,
  );
  console.log(
    '| appenders | raw group commit appends/s | raw records per fdatasync | Sluice appends/s | ratio (median, same round) | range of ratios | target ≥ 0.50 |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|:---:|');
  for (const c of CONCURRENCY) {
    const ratio = median(ratios.get(c)!);
    console.log(
      `| ${fmt(c)} | ${fmt(median(raw.get(c)!))} | ${median(perSync.get(c)!).toFixed(1)} | ${fmt(median(sluice.get(c)!))} | ${ratio.toFixed(2)} | ${range(ratios.get(c)!)} | ${ratio >= TARGET ? 'met' : 'NOT met'} |`,
    );
  }
}

/** The baseline scan: read each segment, skip its header, check each frame's CRC; nothing else. */
async function rawScan(files: string[]): Promise<number> {
  let records = 0;
  let bad = 0;
  for (const file of files) {
    const buf = await fs.readFile(file);
    for (let pos = SEGMENT_HEADER_BYTES; pos + HEADER_BYTES <= buf.length;) {
      const end = pos + HEADER_BYTES + buf.readUInt32LE(pos);
      if (crc32c(buf.subarray(pos + 8, end)) !== buf.readUInt32LE(pos + 4)) bad++;
      records++;
      pos = end;
    }
  }
  if (bad > 0) throw new Error(`raw scan: ${bad} bad frames`);
  return records;
}

async function partB(): Promise<void> {
  const dir = freshDir();
  const writer = fileStore({ dir, shards: 1 });
  await writer.open();
  let issued = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 1_000 }, async () => {
      while (issued < REPLAY_N) {
        issued++;
        await writer.log(0).append(RECORD);
      }
    }),
  );
  const fillSeconds = (performance.now() - t0) / 1000;
  await writer.close();
  const shardDir = path.join(dir, 'shard-0');
  const files = (await fs.readdir(shardDir))
    .filter((f) => f.endsWith('.seg'))
    .sort()
    .map((f) => path.join(shardDir, f));
  let bytes = 0;
  for (const f of files) bytes += (await fs.stat(f)).size;

  const rows = {
    raw: [] as number[],
    open: [] as number[],
    replay: [] as number[],
    openRatio: [] as number[],
    replayRatio: [] as number[],
  };
  let sink = 0;
  const visit = (_lsn: number, record: Uint8Array): void => void (sink += record.length);
  for (let round = 0; round < REPLAY_ROUNDS; round++) {
    const timeRaw = async (): Promise<number> => {
      const t = performance.now();
      const n = await rawScan(files);
      if (n !== REPLAY_N) throw new Error(`raw scan found ${n} records, expected ${REPLAY_N}`);
      return REPLAY_N / ((performance.now() - t) / 1000);
    };
    const timeSluice = async (): Promise<[number, number]> => {
      const store = fileStore({ dir, shards: 1 });
      let t = performance.now();
      await store.open();
      const open = REPLAY_N / ((performance.now() - t) / 1000);
      const before = sink;
      t = performance.now();
      await store.log(0).replay(1, visit);
      const replay = REPLAY_N / ((performance.now() - t) / 1000);
      if (sink - before !== REPLAY_N * RECORD_BYTES)
        throw new Error(`replay visited ${(sink - before) / RECORD_BYTES} records, expected ${REPLAY_N}`);
      await store.close();
      return [open, replay];
    };
    let raw: number;
    let open: number;
    let replay: number;
    if (round % 2 === 0) {
      raw = await timeRaw();
      [open, replay] = await timeSluice();
    } else {
      [open, replay] = await timeSluice();
      raw = await timeRaw();
    }
    rows.raw.push(raw);
    rows.open.push(open);
    rows.replay.push(replay);
    rows.openRatio.push(open / raw);
    rows.replayRatio.push(replay / raw);
  }
  await fs.rm(dir, { recursive: true });

  console.log(
    `\n### (b) replay records/s: ${fmt(REPLAY_N)} records of ${RECORD_BYTES} bytes, ${files.length} segment file(s), ${(bytes / 2 ** 20).toFixed(1)} MiB, median of ${REPLAY_ROUNDS} rounds\n`,
  );
  console.log(
    `(written with 1,000 concurrent appenders in ${fillSeconds.toFixed(1)} s = ${fmt(REPLAY_N / fillSeconds)} appends/s; files in the page cache)\n`,
  );
  console.log('| reader | records/s | ratio to raw scan (median, same round) | range of ratios | target ≥ 0.50 |');
  console.log('|---|---:|---:|---:|:---:|');
  console.log(`| raw scan (read files, crc32c per frame) | ${fmt(median(rows.raw))} | 1.00 | | |`);
  const replayRatio = median(rows.replayRatio);
  console.log(
    `| Sluice \`log.replay(1, visit)\` | ${fmt(median(rows.replay))} | ${replayRatio.toFixed(2)} | ${range(rows.replayRatio)} | ${replayRatio >= TARGET ? 'met' : 'NOT met'} |`,
  );
  console.log(
    `| Sluice \`store.open()\` (recovery checks every frame; not a target) | ${fmt(median(rows.open))} | ${median(rows.openRatio).toFixed(2)} | ${range(rows.openRatio)} | |`,
  );
}

const started = performance.now();
console.log(
  `## bench/store — ${new Date().toISOString().slice(0, 10)}, node ${process.version}, ${os.cpus().length} cores, ${os.platform()} ${os.release()}, temp dir ${os.tmpdir()}`,
);
try {
  await partA();
  await partB();
} finally {
  await fs.rm(root, { recursive: true, force: true });
}
console.log(`\n(bench/store took ${((performance.now() - started) / 1000).toFixed(0)} s)`);
