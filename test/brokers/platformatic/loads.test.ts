/**
 * sluice/kafka/platformatic loads @platformatic/kafka, not kafkajs: an app on it, store included, runs without
 * kafkajs installed. A child process runs the built package under a resolve hook that records every specifier
 * Node's ES module loader resolves (test/fixtures/record-resolves.mjs).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeRuns } from '../../../src/brokers/platformatic/platformatic.js';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'sluice-platformatic-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!nodeRuns(process.versions.node))('sluice/kafka/platformatic', () => {
  it('makes its broker and its Kafka store without loading kafkajs', async () => {
    const log = path.join(dir, 'resolves.log');
    const args = ['--import', './test/fixtures/record-resolves.mjs', 'test/fixtures/platformatic-load-child.mjs'];
    const { stdout } = await run(process.execPath, args, { env: { ...process.env, SLUICE_RESOLVE_LOG: log } });
    const { kafkajs, resolved } = JSON.parse(stdout) as { kafkajs: boolean; resolved: number };
    expect(resolved).toBeGreaterThan(20); // the hook saw the package's own modules
    expect(kafkajs).toBe(false);
  });
});
