/**
 * The store's lock between processes: many processes opening one store at once, holders killed with
 * SIGKILL while they hold it, and a holder whose pid the next process has too (PID 1 in a container).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileStore } from '../../src/index.js';
import { SOAK, soakTimeout } from '../soak.js';

/** A child process of test/fixtures/lock-child.mjs, read a line at a time. */
class Child {
  readonly process: ChildProcess;
  private lines: string[] = [];
  private waiting: ((line: string) => void) | undefined;
  private buffer = '';
  readonly closed: Promise<void>;

  constructor(command: string, args: string[]) {
    this.process = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.process.stdout!.on('data', (d: Buffer) => {
      const parts = (this.buffer + d.toString()).split('\n');
      this.buffer = parts.pop()!;
      for (const line of parts) this.lines.push(line);
      this.deliver();
    });
    this.closed = new Promise((resolve) => this.process.on('close', () => resolve()));
  }

  next(): Promise<string> {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.deliver();
    });
  }

  send(line: string): void {
    this.process.stdin!.write(`${line}\n`);
  }

  /** SIGKILL; resolves once the process is gone and its pipes are closed. */
  async kill(): Promise<void> {
    this.process.kill('SIGKILL');
    await this.closed;
  }

  private deliver(): void {
    if (!this.waiting || this.lines.length === 0) return;
    const resolve = this.waiting;
    this.waiting = undefined;
    resolve(this.lines.shift()!);
  }
}

/** Rounds of the race: all the waiting processes try, one wins and is killed. */
const ROUNDS = Number(process.env.SLUICE_LOCK_ROUNDS ?? (SOAK ? 50 : 10));

const node = (dir: string, name: string) => new Child(process.execPath, ['test/fixtures/lock-child.mjs', dir, name]);

async function records(dir: string): Promise<string[]> {
  const store = fileStore({ dir, shards: 1 });
  await store.open();
  const out: string[] = [];
  await store.log(0).replay(1, (_lsn, r) => out.push(Buffer.from(r).toString()));
  await store.close();
  return out;
}

describe('file store lock between processes', () => {
  it(
    `lets exactly one of 100 processes opening at once hold the store, and hands it on each time the holder is killed (${ROUNDS} rounds)`,
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-lock-race-'));
      let waiting = Array.from({ length: 100 }, (_, i) => node(dir, `c${i}`));
      expect(await Promise.all(waiting.map((c) => c.next()))).toEqual(waiting.map(() => 'ready'));
      const holders: string[] = [];
      while (holders.length < ROUNDS) {
        for (const c of waiting) c.send('go'); // all try at once
        const answers = await Promise.all(waiting.map((c) => c.next()));
        const won = answers.flatMap((a, i) => (a.startsWith('won ') ? [i] : []));
        expect(won, `round ${holders.length}: ${answers.filter((a) => a.startsWith('won')).join(', ')}`).toHaveLength(
          1,
        );
        for (const a of answers)
          if (!a.startsWith('won ')) expect(a).toMatch(/^refused store .* is in use by (process \d+|another process)/);
        const holder = waiting[won[0]!]!;
        holders.push(answers[won[0]!]!.slice(4));
        await holder.kill(); // its LOCK file stays behind, naming a dead pid
        waiting = waiting.filter((c) => c !== holder);
      }
      await Promise.all(waiting.map((c) => c.kill()));
      expect(await records(dir)).toEqual(holders); // each holder appended once; no two wrote at once
    },
    soakTimeout(300_000),
  );

  const unshare =
    spawnSync('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL', 'true']).status === 0;
  it.skipIf(!unshare)(
    'takes over the lock of a killed PID 1 when the next holder is PID 1 as well (a restarted container)',
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-lock-pid1-'));
      for (const name of ['first', 'second', 'third']) {
        const child = new Child('unshare', [
          '--pid',
          '--fork',
          '--mount-proc',
          '--kill-child=SIGKILL',
          process.execPath,
          'test/fixtures/lock-child.mjs',
          dir,
          name,
        ]);
        expect(await child.next()).toBe('ready');
        child.send('go');
        expect(await child.next()).toBe(`won ${name}`);
        expect(readFileSync(path.join(dir, 'LOCK'), 'utf8').trim()).toBe('1'); // it ran as PID 1
        await child.kill(); // unshare dies; the kernel kills its PID 1
      }
      expect(await records(dir)).toEqual(['first', 'second', 'third']);
    },
    60_000,
  );
});
