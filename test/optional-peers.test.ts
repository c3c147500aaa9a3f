/**
 * prom-client and @opentelemetry/api are optional peer dependencies, loaded by dynamic imports only for an app
 * that asks for metrics or tracing. A child process runs the built package under a resolve hook that records
 * every specifier Node's ES module loader resolves (test/fixtures/record-resolves.mjs).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'sluice-peers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function loaded(mode: string): Promise<{ peers: string[]; resolved: number }> {
  const log = path.join(dir, `${mode}.log`);
  const args = ['--import', './test/fixtures/record-resolves.mjs', 'test/fixtures/telemetry-load-child.mjs', mode];
  const { stdout } = await run(process.execPath, args, { env: { ...process.env, SLUICE_RESOLVE_LOG: log } });
  return JSON.parse(stdout) as { peers: string[]; resolved: number };
}

describe('optional peers', () => {
  it('an app without metrics and tracing loads neither prom-client nor @opentelemetry/api', async () => {
    const plain = await loaded('plain');
    expect(plain.peers).toEqual([]);
    expect(plain.resolved).toBeGreaterThan(20); // the hook saw the package's own modules
  });

  it('an app with metrics loads prom-client only, one with tracing @opentelemetry/api only', async () => {
    expect((await loaded('metrics')).peers).toEqual(['prom-client']);
    expect((await loaded('tracing')).peers).toEqual(['@opentelemetry/api']);
  });
});
