/**
 * The package as a project that installs it sees it: `npm pack`, then each fixture project under
 * ./fixtures is copied to a fresh temporary folder, installs the tarball by its path, builds (the
 * TypeScript ones; ts-nodenext with skipLibCheck off, so that the package's own declarations are
 * type-checked too, without kafkajs installed), runs, and prints lines that must equal its expected.txt.
 * Also publint and arethetypeswrong on the tarball.
 *
 * Offline-friendly: npm installs the tarball's dependencies with --prefer-offline, from the cache that the
 * repository's own `npm ci` filled. `typescript`, `@types/node` and (for the fixture that uses
 * `sluice/kafka`) `kafkajs` are linked from the repository's node_modules rather than downloaded.
 *
 * Used by test/project/smoke.test.ts (run by `npm test`) and by `node scripts/smoke/run.mjs`.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = join(REPO, 'scripts', 'smoke', 'fixtures');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The fixture projects, and what each needs beside the tarball. */
export const PROJECTS = {
  esm: { links: [] },
  cjs: { links: ['kafkajs'] },
  'ts-nodenext': { links: ['typescript', '@types/node'] },
  'ts-standard': { links: ['typescript', '@types/node'], buildContains: '__esDecorate' },
  'ts-bundler': { links: ['typescript', '@types/node'] },
};

/**
 * Runs a command; resolves with its output and time (`ms`) whatever its exit code (`code` says), so that
 * a failing check can show what the tool said.
 */
export function run(file, args, cwd, env = {}) {
  const started = performance.now();
  return new Promise((done) => {
    execFile(
      file,
      args,
      { cwd, env: { ...process.env, ...env }, maxBuffer: 32 << 20, timeout: 180_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        done({ command: [file, ...args].join(' '), code, stdout, stderr, ms: Math.round(performance.now() - started) });
      },
    );
  });
}

function must(result) {
  if (result.code !== 0) throw new Error(`${result.command} exited ${result.code}\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** A fresh folder for one smoke run; `cleanup()` removes it. */
export function workspace() {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-smoke-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * `npm pack` of the repository into `dir`: the tarball's path and file list. Its dist/ must be built:
 * `--ignore-scripts` skips the `prepack` build, which `npm test` has just run.
 */
export async function pack(dir) {
  const { stdout } = must(await run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], REPO));
  const [{ filename, files }] = JSON.parse(stdout.slice(stdout.indexOf('[')));
  return { tarball: join(dir, filename), files: files.map((f) => f.path).sort() };
}

/**
 * One fixture project, from copy to output: `{ name, install, build?, start, expected, emitted? }`, each step
 * a command result (install/build/start) and `expected` the lines its expected.txt names.
 */
export async function project(name, tarball, dir) {
  const { links, buildContains } = PROJECTS[name];
  const home = join(dir, name);
  cpSync(join(FIXTURES, name), home, { recursive: true });
  const install = await run(
    npm,
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball],
    home,
  );
  const out = { name, install, expected: readFileSync(join(home, 'expected.txt'), 'utf8') };
  if (install.code !== 0) return out;
  for (const link of links) {
    mkdirSync(dirname(join(home, 'node_modules', link)), { recursive: true });
    symlinkSync(join(REPO, 'node_modules', link), join(home, 'node_modules', link), 'dir');
  }
  if (existsSync(join(home, 'tsconfig.json'))) {
    out.build = await run(process.execPath, [join(home, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', home], home);
    if (out.build.code !== 0) return out;
    if (buildContains) out.emitted = readFileSync(join(home, 'dist', 'main.js'), 'utf8').includes(buildContains);
  }
  const main = JSON.parse(readFileSync(join(home, 'package.json'), 'utf8')).main;
  out.start = await run(process.execPath, [main], home);
  return out;
}

/** publint on the tarball, warnings counted as errors. */
export function publint(tarball) {
  return run(process.execPath, [join(REPO, 'node_modules', '.bin', 'publint'), '--strict', tarball], REPO);
}

/**
 * arethetypeswrong on the tarball, profile `node16`: TypeScript's node16/nodenext resolution from ESM and
 * from CommonJS, and bundler resolution; node10 (`moduleResolution: node`, which knows no `exports` map,
 * so no `sluice/kafka`) is not checked. `sluice/kafka/platformatic` is left out: it is ESM only,
 * like the client it loads (@platformatic/kafka), and loads it with a top-level await, which `require()`
 * refuses.
 */
export function attw(tarball) {
  return run(
    process.execPath,
    [
      join(REPO, 'node_modules', '.bin', 'attw'),
      tarball,
      '--profile',
      'node16',
      '--exclude-entrypoints',
      './kafka/platformatic',
      '--format',
      'table-flipped',
    ],
    REPO,
    { NO_COLOR: '1', FORCE_COLOR: '0' },
  );
}

/** Names in a tarball's file list that only tests use (a simulator's switches, test files, fixtures). */
export function testOnlyFiles(files) {
  return files.filter((f) => /sabotage|\.test\.|(^|\/)(test|tests|__tests__|fixtures)\//i.test(f));
}

/** The fixture projects' folder names. */
export function fixtureNames() {
  return readdirSync(FIXTURES).sort();
}
