/**
 * prom-client and @opentelemetry/api are optional peer dependencies, loaded by dynamic imports only for an app
 * that asks for metrics or tracing. A child process runs the built package under a resolve hook that records
 * every specifier Node's ES module loader resolves (test/fixtures/record-resolves.mjs).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { PROM_CLIENT_RANGE } from '../../src/telemetry/metrics/metrics.js';
import { OTEL_API_RANGE } from '../../src/telemetry/tracing/tracing.js';

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
  it('are asked for in package.json, as optional, in the ranges their loaders name', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    expect(pkg.peerDependencies['prom-client']).toBe(PROM_CLIENT_RANGE);
    expect(pkg.peerDependencies['@opentelemetry/api']).toBe(OTEL_API_RANGE);
    expect(pkg.peerDependenciesMeta['prom-client']?.optional).toBe(true);
    expect(pkg.peerDependenciesMeta['@opentelemetry/api']?.optional).toBe(true);
  });

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
