#!/usr/bin/env node
// Finds a headless browser for the doc generators that photograph a page (scripts/observability/picture.ts).
// `chromium` on PATH wins; otherwise Debian's `chromium` package is fetched with `apt-get download` and
// unpacked with `dpkg -x` into ${SLUICE_CACHE:-~/.cache/sluice}/chromium-<version>/ (scripts/debian.mjs),
// with the packages of the shared libraries it needs that this machine lacks (its dependencies, and theirs,
// that are not installed here), once; later runs find it there. The unpacked browser is started by a
// launcher written beside it, which points the loader at the unpacked libraries.
// On success prints `CHROMIUM=<path of the binary or the launcher>` on stdout (everything else goes to
// stderr) and exits 0. CHROMIUM_DEB_VERSION picks the version (default: the one apt would install).
import fs from 'node:fs';
import path from 'node:path';
import { cacheDir, candidate, downloadAndUnpack, installed, run, withDependencies } from '../debian.mjs';

const say = (msg) => process.stderr.write(`[chromium] ${msg}\n`);
const found = (bin) => {
  process.stdout.write(`CHROMIUM=${bin}\n`);
  process.exit(0);
};
function die(msg) {
  say(`ERROR: ${msg}`);
  process.exit(1);
}

const onPath = run('sh', ['-c', 'command -v chromium']).stdout?.trim();
if (onPath) found(onPath);

const VERSION = process.env.CHROMIUM_DEB_VERSION || candidate('chromium');
if (!VERSION) die('apt knows no chromium package (apt-get update?)');
const CACHE = cacheDir(`chromium-${VERSION}`);
const LAUNCHER = path.join(CACHE, 'chromium');
const BINARY = path.join(CACHE, 'usr', 'lib', 'chromium', 'chromium');
if (fs.existsSync(LAUNCHER)) found(LAUNCHER);

const packages = withDependencies([`chromium=${VERSION}`], (name) => !installed(name));
say(
  `fetching Debian's chromium ${VERSION} (about 115 MB) and what it needs (${packages.slice(1).join(' ')}) into ${CACHE}`,
);
const failure = downloadAndUnpack(packages, CACHE, say);
if (failure) die(failure);
if (!fs.existsSync(BINARY)) die(`the package holds no ${path.relative(CACHE, BINARY)}`);
// The unpacked libraries: chromium's own, and those of the packages beside it (usr/lib/<triplet>/, and
// pulseaudio's private one under it).
const lib = path.join(CACHE, 'usr', 'lib');
const triplets = fs.readdirSync(lib).filter((d) => /-linux-/.test(d));
const LIBS = [
  path.join(lib, 'chromium'),
  ...triplets.flatMap((t) => [path.join(lib, t), path.join(lib, t, 'pulseaudio')]),
]
  .filter((d) => fs.existsSync(d))
  .join(':');
const ldd = run('sh', ['-c', `LD_LIBRARY_PATH='${LIBS}' ldd '${BINARY}'`]).stdout ?? '';
const missing = ldd.split('\n').filter((l) => l.includes('not found'));
if (missing.length > 0) die(`${BINARY} still lacks: ${missing.map((l) => l.trim()).join(', ')}`);
fs.writeFileSync(
  LAUNCHER,
  [
    '#!/bin/sh',
    `LD_LIBRARY_PATH='${LIBS}'\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}`,
    'export LD_LIBRARY_PATH',
    `exec '${BINARY}' "$@"`,
    '',
  ].join('\n'),
  { mode: 0o755 },
);
found(LAUNCHER);
