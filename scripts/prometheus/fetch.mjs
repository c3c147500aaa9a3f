#!/usr/bin/env node
// Finds a Prometheus server binary for the tests that scrape an app with a real one.
// `prometheus` on PATH wins; otherwise Debian's `prometheus` package is fetched with `apt-get download` (no
// install, no root needed beyond what apt-get download asks) and unpacked with `dpkg -x` into
// ${SLUICE_CACHE:-~/.cache/sluice}/prometheus-<version>/, once; later runs find it there.
// On success prints `PROMETHEUS=<path of the binary>` on stdout (everything else goes to stderr) and exits 0.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The version the tests are written against (Debian 12's package); another one on PATH is used as it is.
const VERSION = process.env.PROMETHEUS_DEB_VERSION || '2.42.0+ds-5+deb12u1';
const CACHE = path.join(
  process.env.SLUICE_CACHE || path.join(os.homedir(), '.cache', 'sluice'),
  `prometheus-${VERSION.replace(/[^\w.+-]/g, '_')}`,
);
const BINARY = path.join(CACHE, 'usr', 'bin', 'prometheus');

const say = (msg) => process.stderr.write(`[prometheus] ${msg}\n`);
const found = (bin) => {
  process.stdout.write(`PROMETHEUS=${bin}\n`);
  process.exit(0);
};
function die(msg) {
  say(`ERROR: ${msg}`);
  process.exit(1);
}
const run = (cmd, args, cwd) => spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

const onPath = run('sh', ['-c', 'command -v prometheus']).stdout?.trim();
if (onPath) found(onPath);
if (fs.existsSync(BINARY)) found(BINARY);

fs.mkdirSync(CACHE, { recursive: true });
const work = fs.mkdtempSync(path.join(CACHE, 'download-'));
let failure;
try {
  say(`fetching Debian's prometheus ${VERSION} (about 19 MB) into ${CACHE}`);
  let got = run('apt-get', ['download', `prometheus=${VERSION}`], work);
  if (got.status !== 0) {
    say('not in the package lists: running apt-get update once');
    run('apt-get', ['update', '-qq'], work);
    got = run('apt-get', ['download', `prometheus=${VERSION}`], work);
  }
  const deb = fs.readdirSync(work).find((f) => f.endsWith('.deb'));
  if (got.status !== 0 || !deb) {
    failure = `apt-get download prometheus=${VERSION} failed: ${(got.stderr || got.error?.message || '').trim()}`;
  } else {
    const unpacked = run('dpkg', ['-x', path.join(work, deb), CACHE]);
    if (unpacked.status !== 0) failure = `dpkg -x failed: ${(unpacked.stderr || unpacked.error?.message || '').trim()}`;
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true }); // (die and found exit: each is called after this)
}
if (failure) die(failure);
if (!fs.existsSync(BINARY)) die(`the package holds no ${path.relative(CACHE, BINARY)}`);
found(BINARY);
