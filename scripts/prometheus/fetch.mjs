#!/usr/bin/env node
// Finds a Prometheus server binary for the tests that scrape an app with a real one.
// `prometheus` on PATH wins; otherwise Debian's `prometheus` package is fetched with `apt-get download` (no
// install, no root needed beyond what apt-get download asks) and unpacked with `dpkg -x` into
// ${SLUICE_CACHE:-~/.cache/sluice}/prometheus-<version>/, once; later runs find it there (scripts/debian.mjs).
// On success prints `PROMETHEUS=<path of the binary>` on stdout (everything else goes to stderr) and exits 0.
//
// With --ui, also the web UI's assets (for scripts/observability/picture.ts, which photographs its graph
// page): Debian's package links its JavaScript and fonts from the libjs-* and fonts-* packages it depends
// on, which are unpacked beside it, and prints `PROMETHEUS_WEB=<assets directory>` too, the value of the
// server's --web.local-assets (none for a `prometheus` on PATH: its own default is where its package put them).
import fs from 'node:fs';
import path from 'node:path';
import { cacheDir, danglingLinks, downloadAndUnpack, run, withDependencies } from '../debian.mjs';

// The version the tests are written against (Debian 12's package); another one on PATH is used as it is.
const VERSION = process.env.PROMETHEUS_DEB_VERSION || '2.42.0+ds-5+deb12u1';
const CACHE = cacheDir(`prometheus-${VERSION}`);
const BINARY = path.join(CACHE, 'usr', 'bin', 'prometheus');
const WEB = path.join(CACHE, 'usr', 'share', 'prometheus', 'web');
const ui = process.argv.includes('--ui');

const say = (msg) => process.stderr.write(`[prometheus] ${msg}\n`);
const found = (bin, web) => {
  process.stdout.write(`PROMETHEUS=${bin}\n`);
  if (ui && web) process.stdout.write(`PROMETHEUS_WEB=${web}\n`);
  process.exit(0);
};
function die(msg) {
  say(`ERROR: ${msg}`);
  process.exit(1);
}

const onPath = run('sh', ['-c', 'command -v prometheus']).stdout?.trim();
if (onPath) found(onPath);

if (!fs.existsSync(BINARY)) {
  say(`fetching Debian's prometheus ${VERSION} (about 19 MB) into ${CACHE}`);
  const failure = downloadAndUnpack([`prometheus=${VERSION}`], CACHE, say);
  if (failure) die(failure);
  if (!fs.existsSync(BINARY)) die(`the package holds no ${path.relative(CACHE, BINARY)}`);
}
if (ui && danglingLinks(WEB).length > 0) {
  // The UI's assets are links into /usr/share/javascript and /usr/share/fonts, relative ones: unpacked in the
  // same directory, their packages complete them, whether or not this machine has them installed.
  const assets = withDependencies([`prometheus=${VERSION}`], (name) => /^(libjs|fonts)-/.test(name)).slice(1);
  say(`fetching the web UI's assets (${assets.join(' ')}) into ${CACHE}`);
  const failure = downloadAndUnpack(assets, CACHE, say);
  if (failure) die(failure);
  const missing = danglingLinks(WEB);
  if (missing.length > 0) die(`the web UI still lacks ${missing.map((p) => path.relative(WEB, p)).join(', ')}`);
}
found(BINARY, WEB);
