import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

/** The examples the docs point to must keep running: each is started as a user would and must exit 0. */
describe('examples', () => {
  it.each([
    'demo.ts',
    'workers.ts',
    'manual/workers.ts',
    'routers.ts',
    'outcomes.ts',
    'pace.ts',
    'middlewares.ts',
    'observability.ts',
    'publishing.ts',
  ])(
    'examples/%s runs to completion',
    async (file) => {
      const { stdout } = await run(process.execPath, ['--no-warnings', '--loader', 'ts-node/esm', `examples/${file}`], {
        env: { ...process.env, SLUICE_LOG_LEVEL: 'silent' },
        timeout: 60_000,
      });
      expect(stdout.length).toBeGreaterThan(0);
      expect(stdout).not.toMatch(/\bNO\b/); // the examples print their own checks: yes, or NO
    },
    90_000,
  );
});
