/**
 * Durability by crashing: a child appends with acknowledgements and is killed with SIGKILL at a random
 * moment, again and again on the same directory. After each kill the log must hold every acknowledged
 * record at its LSN, nothing twice, nothing that was never appended, and LSNs without gaps.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileStore } from '../../src/index.js';
import { killAfterAcks } from '../crash-child.js';
import { seeded } from '../helpers.js';
import { crashRounds, soakTimeout } from '../soak.js';

/** 60 kills in `npm test`, 300 in the soak. */
const ITERATIONS = crashRounds(0.3);

/** Runs the appender until it has acknowledged `acks` appends, kills it, returns what it acknowledged by `shard/lsn`. */
async function runAndKill(dir: string, tag: string, acks: number): Promise<Map<string, string>> {
  const acked = await killAfterAcks('test/fixtures/store-appender.mjs', [dir, tag], acks);
  return new Map(acked.map(([shard, lsn, payload]) => [`${shard}/${lsn}`, payload!]));
}

describe('file store lock', () => {
  it('refuses a second process while the first holds the directory, and takes over once it is killed', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-lock-'));
    const child = spawn(process.execPath, ['test/fixtures/store-appender.mjs', dir, 'held'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => d.toString().includes('open') && resolve()),
    );
    await expect(fileStore({ dir, shards: 2, segmentBytes: 32768 }).open()).rejects.toThrow(
      new RegExp(`in use by process ${child.pid}`),
    );
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const store = fileStore({ dir, shards: 2, segmentBytes: 32768 });
    await store.open();
    await store.close();
  });
});

describe('file store under SIGKILL', () => {
  it(
    `keeps every acknowledged record across ${ITERATIONS} kills at random moments`,
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-crash-'));
      const random = seeded(Number(process.env.SLUICE_CRASH_SEED ?? 11));
      const everAcked = new Map<string, string>();
      for (let i = 0; i < ITERATIONS; i++) {
        const acked = await runAndKill(dir, `r${i}`, 1 + Math.floor(random() * 120));
        for (const [at, payload] of acked) everAcked.set(at, payload);
        const store = fileStore({ dir, shards: 2, segmentBytes: 32768 });
        await store.open(); // recovers; takes over the dead child's lock
        const seen = new Set<string>();
        for (let shard = 0; shard < 2; shard++) {
          let expected = 1;
          await store.log(shard).replay(1, (lsn, record) => {
            expect(lsn).toBe(expected++); // no gaps
            const payload = Buffer.from(record).toString();
            expect(payload).toMatch(/^r\d+:\d+:\d+$/); // nothing that was never appended
            expect(seen.has(payload)).toBe(false); // nothing twice
            seen.add(payload);
            const ack = everAcked.get(`${shard}/${lsn}`);
            if (ack !== undefined) expect(payload).toBe(ack);
          });
          expect(store.log(shard).durableLsn()).toBe(expected - 1);
        }
        for (const [at, payload] of everAcked)
          expect(seen.has(payload), `acknowledged ${at} ${payload} lost`).toBe(true);
        await store.close();
      }
    },
    soakTimeout(600_000),
  );
});
