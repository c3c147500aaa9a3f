/** The `sluice` command in a child process, as a user runs it: its output read line by line, as it comes. */
import { spawn, type ChildProcess } from 'node:child_process';

/** The built command (the test setup builds dist/ first). */
export const SLUICE = 'dist/cli/main.js';

export class Sluice {
  readonly child: ChildProcess;
  readonly stdout: string[] = [];
  stderr = '';
  readonly exited: Promise<number>;
  private readonly waiting: { pattern: RegExp; count: number; resolve: () => void }[] = [];

  constructor(args: readonly string[], env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, [SLUICE, ...args], {
      env: { ...process.env, SLUICE_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      this.stdout.push(...lines);
      this.check();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) =>
      this.child.once('close', (code, signal) => resolve(code ?? (signal === null ? -1 : 128))),
    );
  }

  /** How many lines of stdout match `pattern`. */
  count(pattern: RegExp): number {
    return this.stdout.filter((l) => pattern.test(l)).length;
  }

  /** Resolves once `count` lines of stdout match `pattern`; rejects if the command exits first. */
  lines(pattern: RegExp, count = 1): Promise<void> {
    if (this.count(pattern) >= count) return Promise.resolve();
    const seen = new Promise<void>((resolve) => this.waiting.push({ pattern, count, resolve }));
    const ended = this.exited.then((code) => {
      throw new Error(`sluice exited (${code}) before ${count} lines matched ${pattern}: ${this.stderr}`);
    });
    return Promise.race([seen, ended]);
  }

  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number> {
    this.child.kill('SIGTERM');
    return this.exited;
  }

  private check(): void {
    for (const w of [...this.waiting])
      if (this.count(w.pattern) >= w.count) {
        this.waiting.splice(this.waiting.indexOf(w), 1);
        w.resolve();
      }
  }
}

/** Runs `sluice <args>` to its end: its exit code, stdout and stderr. */
export async function sluice(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = new Sluice(args, env);
  const code = await run.exited;
  return { code, stdout: run.stdout.join('\n'), stderr: run.stderr };
}
