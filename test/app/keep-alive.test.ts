// While a call the user awaits waits on a timer of the app, that timer keeps the process alive (see
// docs/testing.md). Each case runs a child script on the system clock that nothing else holds open.
// The child imports dist/: `npm run build` first.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const CHILD = 'test/fixtures/keep-alive-child.mjs';

async function runChild(
  scenario: string,
  onLine: (line: string, kill: (s: NodeJS.Signals) => void) => void = () => {},
) {
  const child = spawn(process.execPath, [CHILD, scenario], { stdio: ['ignore', 'pipe', 'inherit'], timeout: 15_000 }); // a safety net only: a hung child fails, not hangs, the test
  const lines: string[] = [];
  let rest = '';
  child.stdout.on('data', (chunk: Buffer) => {
    rest += chunk.toString();
    const parts = rest.split('\n');
    rest = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      onLine(line, (s) => child.kill(s));
    }
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on('exit', (c, s) => resolve([c, s])),
  );
  const messages = lines.map((l) => (l.startsWith('{') ? (JSON.parse(l) as { msg: string }).msg : l));
  return { code, signal, messages };
}

describe('timers that an awaited call waits on keep the process alive', () => {
  it('await app.stop() with a handler waiting for ctx.signal: the shutdown deadline fires, the signal aborts, stop resolves', async () => {
    const { code, messages } = await runChild('stop');
    expect(code).toBe(0);
    expect(messages).toContain('aborted');
    expect(messages.indexOf('stopped')).toBeGreaterThan(messages.indexOf('aborted'));
    expect(messages.at(-1)).toBe('exit');
  });

  it('app.run() and SIGTERM with such a handler: it logs "stopped" and run() resolves', async () => {
    const { code, messages } = await runChild('run', (line, kill) => line === 'handling' && kill('SIGTERM'));
    expect(code).toBe(0);
    expect(messages).toEqual(expect.arrayContaining(['signal received, stopping', 'aborted', 'stopped']));
    expect(messages.at(-1)).toBe('exit');
  });

  it('app.run() and SIGTERM while the app is still starting: the start unwinds, "stopped" is logged, run() resolves', async () => {
    const { code, messages } = await runChild(
      'signal-during-start',
      (line, kill) => line === 'connecting' && kill('SIGTERM'),
    );
    expect(code).toBe(0);
    expect(messages).toEqual(expect.arrayContaining(['signal received, stopping', 'stopped', 'read after run: 0']));
    expect(messages).not.toContain('started');
    expect(messages.at(-1)).toBe('exit');
  });

  it('app.run() whose start hangs (an onStartup hook that never ends): a second SIGTERM ends the process', async () => {
    const { code, signal, messages } = await runChild('start-hangs', (line, kill) => {
      if (line === 'starting') kill('SIGTERM');
      else if (line.includes('signal received, stopping')) kill('SIGTERM'); // the stop waits for the start
    });
    expect([code, signal]).toEqual([null, 'SIGTERM']);
    expect(messages).toContain('signal received, stopping');
    expect(messages).not.toContain('run resolved');
  });

  it('await app.start() joining a group whose other member is busy: the wait for its revoke holds', async () => {
    const { code, messages } = await runChild('join');
    expect(code).toBe(0);
    expect(messages).toContain('joined');
    expect(messages.at(-1)).toBe('exit');
  });

  it("a script awaiting its own promise while a retry's backoff is pending", async () => {
    const { code, messages } = await runChild('retry');
    expect(code).toBe(0);
    expect(messages).toContain('second attempt ran');
  });

  it('a script awaiting its own promise while a hung handler waits for its timeout', async () => {
    const { code, messages } = await runChild('timeout');
    expect(code).toBe(0);
    expect(messages).toContain('second attempt ran');
  });
});
