#!/usr/bin/env node
// The Node.js versions CI tests on besides the machine's own: each pinned to an exact release, installed
// from the npm registry's `node` package (a prebuilt binary shipped inside the package) into
// ${SLUICE_CACHE:-~/.cache/sluice}/node-<version>/, once.
//
//   node scripts/node-versions.mjs          installs any missing, prints `<version> <bin dir>` per version
//   node scripts/node-versions.mjs 24       the same for the pinned version(s) of that major only
//
// Each bin dir holds only `node`: put it first on PATH and `npm` (the machine's, a script started through
// `env node`) runs under it too, as does everything a test spawns through process.execPath.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Active LTS and maintenance LTS (the machine's own Node is the third version tested).
const VERSIONS = ['22.23.3', '24.21.0'];

const CACHE = process.env.SLUICE_CACHE || path.join(os.homedir(), '.cache', 'sluice');
const say = (msg) => process.stderr.write(`[node-versions] ${msg}\n`);
function die(msg) {
  say(`ERROR: ${msg}`);
  process.exit(1);
}

const binDir = (root) => path.join(root, 'node_modules', 'node', 'bin');
/** The version the binary under `root` reports, or '' when there is none (or it does not run). */
function installed(root) {
  const node = path.join(binDir(root), 'node');
  if (!fs.existsSync(node)) return '';
  const r = spawnSync(node, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim().replace(/^v/, '') : '';
}

function install(version) {
  const root = path.join(CACHE, `node-${version}`);
  if (installed(root) === version) return binDir(root);
  // Into a directory of this process's own, then renamed: a concurrent run never sees half an install.
  const tmp = `${root}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  fs.writeFileSync(path.join(tmp, 'package.json'), '{ "private": true }\n');
  say(`installing node@${version} into ${root} ...`);
  const t0 = Date.now();
  // The package's preinstall script fetches the platform's binary (node-<os>-<arch>@<version>), so
  // scripts must run. stdout goes to stderr: this script's stdout is its answer.
  const r = spawnSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--no-package-lock', '--ignore-scripts=false', `node@${version}`],
    { cwd: tmp, stdio: ['ignore', 2, 2] },
  );
  const got = r.status === 0 ? installed(tmp) : '';
  if (got !== version) {
    fs.rmSync(tmp, { recursive: true, force: true });
    die(
      r.status !== 0
        ? `npm install node@${version} failed (exit ${r.status ?? r.error?.message})`
        : `npm install node@${version} left no runnable node ${version} in ${binDir(tmp)} (found '${got}'): did its preinstall script run?`,
    );
  }
  fs.rmSync(root, { recursive: true, force: true });
  try {
    fs.renameSync(tmp, root);
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (installed(root) !== version) throw e; // else a concurrent run installed it first
  }
  say(`node ${version} installed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return binDir(root);
}

const majors = process.argv.slice(2);
const wanted = majors.length ? VERSIONS.filter((v) => majors.includes(v.split('.')[0])) : VERSIONS;
if (majors.length && wanted.length !== majors.length)
  die(`no pinned version for major ${majors.join(', ')} (pinned: ${VERSIONS.join(', ')})`);
for (const version of wanted) console.log(`${version} ${install(version)}`);
