/**
 * The `sluice` command, run for real in child processes: exit codes, `asyncapi`, `run` (with `--reload`),
 * `docs serve` (opened in headless Chromium) and `publish`, on the memory broker. TypeScript modules load
 * without a build step (examples/app.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { findChromium, openPage } from '../chromium.js';
import { Sluice, sluice } from './child.js';

const APP = 'examples/app.ts';
const TWO = 'test/fixtures/cli/two.mjs';
const dir = mkdtempSync(path.join(tmpdir(), 'sluice-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sluice: usage and exit codes', () => {
  it.each([
    [[], 2, /a command is needed/],
    [['launch', APP], 2, /unknown command "launch"/],
    [['asyncapi', APP, '--port', '1'], 2, /asyncapi takes no --port/],
    [['asyncapi', APP, '--colour'], 2, /Unknown option '--colour'/],
    [['run'], 2, /run: the module exporting the App is needed/],
    [['publish', APP, 'orders'], 2, /a topic and a JSON value are needed/],
    [['docs', 'serve', TWO, '--export', 'first', '--port', 'eighty'], 2, /--port must be an integer/],
    [['asyncapi', 'no/such/app.ts'], 3, /no such file/],
    [['asyncapi', 'test/fixtures/cli/none.mjs'], 3, /exports no App/],
    [['asyncapi', TWO], 3, /exports several Apps \(first, second\); pick one with --export/],
    [['asyncapi', TWO, '--export', 'third'], 3, /exports no App named "third"/],
  ])('sluice %j exits %i, saying why in one line', async (args, code, why) => {
    const run = await sluice(args);
    expect(run.code).toBe(code);
    expect(run.stderr).toMatch(why);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('prints its usage with --help and its version with --version', async () => {
    const help = await sluice(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes: 0 done, 1 the app failed, 2 usage error, 3 the module/);
    const version = await sluice(['--version']);
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(version.stdout.trim()).toBe(pkg.version);
  });
});

describe('sluice asyncapi', () => {
  // Three CLI processes, each compiling the app with ts-node: 10-15 s in a loaded CI run, once past 20 s.
  it('prints the document of a TypeScript app as JSON, as YAML, or into a file', { timeout: 60_000 }, async () => {
    const json = await sluice(['asyncapi', APP]);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { asyncapi: string; info: { title: string }; channels: object };
    expect(doc).toMatchObject({ asyncapi: '3.0.0', info: { title: 'billing', version: '1.0.0' } });
    expect(Object.keys(doc.channels)).toEqual(expect.arrayContaining(['orders', 'invoices', 'orders.dlq']));
    const yaml = await sluice(['asyncapi', APP, '--yaml']);
    expect(parse(yaml.stdout)).toEqual(doc);
    const file = path.join(dir, 'asyncapi.json');
    expect((await sluice(['asyncapi', TWO, '--export', 'second', '-o', file])).code).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ info: { description: 'The second app.' } });
  });
});

describe('sluice run', () => {
  it('runs the app until SIGTERM, then stops it gracefully (exit 0)', async () => {
    const run = new Sluice(['run', APP]);
    await run.lines(/^invoice for o-1: 1\.99$/);
    expect(await run.stop()).toBe(0);
    expect(run.stdout.at(-1)).toBe('stopped');
  });

  it(
    '--reload: a change under the watched folder stops the app gracefully and starts it again',
    { timeout: 60_000 },
    async () => {
      const watched = mkdtempSync(path.join(dir, 'watched-'));
      const run = new Sluice(['run', APP, '--reload', '--watch', watched]);
      await run.lines(/^ready$/);
      writeFileSync(path.join(watched, 'handlers.ts'), 'export const changed = 1;\n');
      await run.lines(/^ready$/, 2);
      expect(run.stdout.filter((l) => /^(ready|stopped)$/.test(l))).toEqual(['ready', 'stopped', 'ready']);
      expect(run.stderr).toMatch(/handlers\.ts changed; restarting/);
      expect(await run.stop()).toBe(0);
      expect(run.count(/^stopped$/)).toBe(2);
    },
  );

  it('exits 1, saying why, when the app fails to start', async () => {
    const failing = path.join(dir, 'failing.mjs');
    writeFileSync(
      failing,
      `import { App, MemoryBroker } from ${JSON.stringify(path.resolve('dist/index.js'))};
export default new App({ name: 'failing' }).withBroker(new MemoryBroker(), () => {}).onStartup(() => {
  throw new Error('no database');
});\n`,
    );
    const run = await sluice(['run', failing]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/App "failing" failed: .*no database/);
  });
});

describe('sluice docs serve', () => {
  it('serves the document as a page a browser shows, and as JSON', async () => {
    const chromium = findChromium();
    const serve = new Sluice(['docs', 'serve', APP, '--port', '0']);
    await serve.lines(/^serving http:\/\/127\.0\.0\.1:\d+\/$/);
    const url = serve.stdout.find((l) => l.startsWith('serving '))!.slice('serving '.length);
    const dom = await openPage(chromium, url);
    expect(dom).toContain('<title>billing · AsyncAPI</title>');
    const text = dom.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
    expect(text).toContain('Bills orders and issues invoices.');
    expect(text).toContain('receive orders.receive on orders');
    expect(text).toContain('4 lanes by key');
    const json = (await (await fetch(`${url}asyncapi.json`)).json()) as { asyncapi: string };
    expect(json.asyncapi).toBe('3.0.0');
    expect((await fetch(`${url}nothing`)).status).toBe(404);
    expect(await serve.stop()).toBe(0);
  }, 600_000);
});

describe('sluice publish', () => {
  // Four runs of the CLI, each a process that loads the app: on a loaded machine longer than the default 20 s.
  it(
    "checks the value against the schema of the app's subscriber of the topic before it publishes",
    { timeout: 60_000 },
    async () => {
      const ok = await sluice(['publish', APP, 'orders', '{"id":"o-9","cents":5}', '--key', 'o-9', '--header', 'a=b']);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toBe('published to orders');
      const refused = await sluice(['publish', APP, 'orders', '{"id":9}']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(
        /subscriber "orders" would not take it: id: Invalid input: expected string, received number; cents: /,
      );
      const notJson = await sluice(['publish', APP, 'orders', '{id']);
      expect(notJson.code).toBe(2);
      expect(notJson.stderr).toMatch(/<json> is not JSON/);
      expect((await sluice(['publish', APP, 'orders', '{}', '--header', 'novalue'])).stderr).toMatch(
        /--header must be name=value/,
      );
    },
  );
});
