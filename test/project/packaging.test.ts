import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { KAFKAJS_RANGE, loadKafkajs } from '../../src/brokers/kafka/kafkajs.js';
import { PLATFORMATIC_RANGE, loadPlatformatic, nodeRuns } from '../../src/brokers/platformatic/platformatic.js';
import * as adapter from '../../src/adapter.js';
import * as sluice from '../../src/index.js';
import { SluiceError } from '../../src/index.js';
import * as testing from '../../src/testing.js';
import type * as Load from '../../src/require/load.cjs';

const run = promisify(execFile);
// The require() stubs are CommonJS (.cts), which Vitest does not compile: their tests use the build.
const { requireEsm } = createRequire(import.meta.url)('../../dist/require/load.cjs') as typeof Load;
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  peerDependencies: Record<string, string>;
};

/** Node's error for a module that `require` cannot find. */
function notFound(id: string): Error {
  return Object.assign(
    new Error(`Cannot find module '${id}'\nRequire stack:\n- /app/node_modules/sluice/dist/brokers/kafka/kafkajs.js`),
    { code: 'MODULE_NOT_FOUND' },
  );
}

describe('kafkajs, an optional peer dependency of sluice/kafka', () => {
  it('missing, is a DEPENDENCY_MISSING SluiceError that names the package and the command that installs it', () => {
    const missing = notFound('kafkajs');
    let thrown: unknown;
    try {
      loadKafkajs(() => {
        throw missing;
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SluiceError);
    expect(thrown).toMatchObject({ code: 'DEPENDENCY_MISSING', cause: missing });
    expect((thrown as Error).message).toContain(`npm install kafkajs@${KAFKAJS_RANGE}`);
  });

  it('installed but broken (a file inside it missing, or any other error), fails with its own error', () => {
    const inner = notFound('./src/producer');
    expect(() =>
      loadKafkajs(() => {
        throw inner;
      }),
    ).toThrow(inner);
  });

  it('is asked for in the range package.json declares', () => {
    expect(pkg.peerDependencies.kafkajs).toBe(KAFKAJS_RANGE);
  });
});

describe('@platformatic/kafka, an optional peer dependency of sluice/kafka/platformatic', () => {
  it('runs on Node.js 22.22 or later, 24.6 or later on Node 24', () => {
    expect(['20.19.5', '22.21.1', '24.5.0'].filter(nodeRuns)).toEqual([]);
    expect(['22.22.0', '22.23.3', '23.0.0', '24.6.0', '24.21.0', '25.1.0'].every(nodeRuns)).toBe(true);
  });

  it('on an older Node, is a RUNTIME_UNSUPPORTED SluiceError that says to use sluice/kafka, and loads nothing', async () => {
    let loaded = false;
    const load = loadPlatformatic(() => Promise.resolve((loaded = true)), '20.19.5');
    await expect(load).rejects.toBeInstanceOf(SluiceError);
    await expect(load).rejects.toMatchObject({ code: 'RUNTIME_UNSUPPORTED' });
    await expect(load).rejects.toThrow(/20\.19\.5.*sluice\/kafka/);
    expect(loaded).toBe(false);
  });

  it('missing, is a DEPENDENCY_MISSING SluiceError that names the command that installs it', async () => {
    const missing = Object.assign(new Error(`Cannot find package '@platformatic/kafka' imported from /app/x.js`), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const load = loadPlatformatic(() => Promise.reject(missing), '24.21.0');
    await expect(load).rejects.toMatchObject({ code: 'DEPENDENCY_MISSING', cause: missing });
    await expect(load).rejects.toThrow(`npm install @platformatic/kafka@${PLATFORMATIC_RANGE}`);
    expect(pkg.peerDependencies['@platformatic/kafka']).toBe(PLATFORMATIC_RANGE);
  });
});

describe("require('sluice') and require() of its subpaths", () => {
  it.each([
    ['index', 'App'],
    ['testing', 'ManualClock'],
    ['adapter', 'shardOf'],
    ['kafka', 'KafkaBroker'],
  ])(
    'dist/require/%s.cjs loads the ES module, so no module it reaches uses top-level await (require() would throw ERR_REQUIRE_ASYNC_MODULE)',
    (stub, name) => {
      // Node's own require(), not Vitest's module graph. That require() and import share one copy of each
      // class is checked by the smoke test's CommonJS project (test/project/smoke.test.ts), in a plain Node process.
      const required = createRequire(import.meta.url)(`../../dist/require/${stub}.cjs`) as Record<string, unknown>;
      expect(typeof required[name]).toBe('function');
    },
  );
});

describe("require('sluice') on a Node that cannot require an ES module", () => {
  it('fails naming the Node.js versions that can, and how to load it with import instead', () => {
    const refused = Object.assign(new Error('require() of ES Module not supported'), { code: 'ERR_REQUIRE_ESM' });
    expect(() =>
      requireEsm('sluice', () => {
        throw refused;
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_REQUIRE_ESM',
        cause: refused,
        message: expect.stringMatching(/require\('sluice'\) needs .*20\.19\+, 22\.12\+ or 24\+.*import/),
      }),
    );
  });

  it('passes any other error through as it is', () => {
    const other = new SluiceError('DEPENDENCY_MISSING', 'no kafkajs');
    expect(() =>
      requireEsm('sluice/kafka', () => {
        throw other;
      }),
    ).toThrow(other);
  });

  it.each(['index', 'testing', 'adapter', 'kafka'])(
    'says so from the built stub dist/require/%s.cjs, with require(esm) turned off',
    async (stub) => {
      const refused = run(process.execPath, [
        '--no-experimental-require-module',
        '-e',
        `require('./dist/require/${stub}.cjs')`,
      ]);
      await expect(refused).rejects.toMatchObject({
        stderr: expect.stringMatching(/needs a Node\.js that can require\(\) an ES module: 20\.19\+, 22\.12\+ or 24\+/),
      });
    },
  );
});

describe('sluice/testing and sluice/adapter', () => {
  it.each([
    ['testing', testing],
    ['adapter', adapter],
  ])(
    'export nothing that sluice does not export too, as the same object (it keeps what moved, deprecated)',
    (_name, sub) => {
      const main = sluice as Record<string, unknown>;
      for (const [name, value] of Object.entries(sub)) expect(main[name], name).toBe(value);
    },
  );
});
