/**
 * A pause under SIGKILL: a child (test/fixtures/pause-child.mjs) pauses a paced subscriber on a file store,
 * sends events whose runs then wait, resumes, and is killed at random lines, again and again on the same
 * directory. Across all lives: an event sent after an acknowledged pause never runs before the next resume
 * was asked (in that life or a later one); a life that follows an acknowledged pause with no resume asked
 * after it comes back paused; and a last life, resuming if need be, runs every acknowledged event's key.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { seeded } from '../helpers.js';
import { crashRounds, soakTimeout } from '../soak.js';

const ITERATIONS = crashRounds(1 / 10);
const CHILD = 'test/fixtures/pause-child.mjs';

/** Runs one life; with `killAt`, SIGKILLs it after that many lines. Resolves with the lines it printed. */
function life(dir: string, n: number, killAt: number | undefined): Promise<string[]> {
  const mode = killAt === undefined ? 'drain' : 'rounds';
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, dir, String(n), mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let buffer = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString();
      const got = buffer.split('\n');
      buffer = got.pop()!;
      lines.push(...got);
      if (killAt !== undefined && lines.length >= killAt && !child.killed) child.kill('SIGKILL');
    });
    child.on('close', (code, signal) => {
      const ok = killAt === undefined ? code === 0 && lines.includes('drained') : signal === 'SIGKILL';
      if (ok) resolve(lines);
      else reject(new Error(`life ${n} ended with ${signal ?? `code ${code}`}: ${stderr}`));
    });
  });
}

describe('a pause under SIGKILL', () => {
  it(
    `holds every run of an event sent while paused until a resume is asked, across ${ITERATIONS} kills`,
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-pause-crash-'));
      const random = seeded(20261207);
      /** Keys sent after an acknowledged pause, whose runs may not start before a resume is asked. */
      const held = new Set<string>();
      const sent = new Set<string>();
      const ran = new Set<string>();
      let paused = false; // an acknowledged pause, and no resume asked since
      for (let n = 0; n <= ITERATIONS; n++) {
        const last = n === ITERATIONS;
        const lines = await life(dir, n, last ? undefined : 3 + Math.floor(random() * 25));
        for (const line of lines) {
          const [word, ...rest] = line.split(' ');
          if (word === 'state') {
            if (paused) expect(rest[0], `life ${n} came back ${rest[0]} after an acknowledged pause`).toBe('paused');
          } else if (word === 'ack' && rest[0] === 'paused') paused = true;
          else if (word === 'resuming') {
            paused = false;
            held.clear();
          } else if (word === 'ack' && rest[0] === 'sent') {
            const key = JSON.parse(rest[1]!) as string;
            sent.add(key);
            if (paused) held.add(key);
          } else if (word === 'run') {
            const key = JSON.parse(rest[0]!) as string;
            expect(held.has(key), `key ${key} ran in life ${n} while paused`).toBe(false);
            ran.add(key);
          }
        }
      }
      expect([...sent].filter((k) => !ran.has(k))).toEqual([]);
      expect(sent.size).toBeGreaterThan(0);
    },
    soakTimeout(240_000),
  );
});
