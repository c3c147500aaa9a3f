/**
 * `npm run picture`: the picture in docs/observability.md of the demo (examples/demo.ts) as a real Prometheus
 * server saw it. Not a test: a doc generator, run by hand when the demo or the metrics change.
 *
 * 1. Prometheus (scripts/prometheus: Debian's package and its web UI's assets, fetched once into the cache)
 *    scrapes a free loopback port every second.
 * 2. The demo runs on that port with its metrics on (SLUICE_DEMO_METRICS_PORT) and orders coming in waves
 *    for PICTURE_SECONDS (default 90: SLUICE_DEMO_SECONDS), then finishes and stops as `npm run demo` does.
 * 3. Headless Chromium (scripts/chromium/fetch.mjs: Debian's package, fetched once) photographs Prometheus's
 *    own graph page, three graphs over the demo's run: the PANELS below.
 * 4. Prometheus stops; the picture is written to PICTURE_OUT (default docs/observability-demo.png).
 *
 * Run from the repository root: `npm run picture`, or
 *   node --no-warnings --loader ts-node/esm scripts/observability/picture.ts
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findPrometheus, freePort, PrometheusServer } from '../prometheus/server.js';

/** The graphs, top to bottom, as docs/observability.md explains them. */
const PANELS = [
  // Outcomes that have not happened yet (their counter at 0) are left out, and with them the legend's clutter.
  'sum by (subscriber, outcome) (rate(sluice_handled_total[5s]) and sluice_handled_total > 0)',
  'sum by (subscriber) (sluice_in_flight)',
  'sum by (subscriber) (sluice_consumer_lag)',
];
const SECONDS = Number(process.env.PICTURE_SECONDS ?? 90);
const OUT = process.env.PICTURE_OUT ?? 'docs/observability-demo.png';
/** Each graph of the page, with its query box and legend, is about 800 pixels high at this width. */
const WIDTH = 1100;
const HEIGHT = 60 + 800 * PANELS.length;

const say = (msg: string): void => void process.stderr.write(`[picture] ${msg}\n`);

function findChromium(): string {
  const found = spawnSync(process.execPath, ['scripts/chromium/fetch.mjs'], {
    encoding: 'utf8',
    timeout: 600_000,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const binary = /CHROMIUM=(\S+)/.exec(found.stdout ?? '')?.[1];
  if (found.status !== 0 || !binary) throw new Error('no Chromium: scripts/chromium/fetch.mjs failed');
  return binary;
}

/** Runs the demo to its end with its metrics on `port`; its printout goes to ours. */
async function runDemo(port: number): Promise<void> {
  const demo = spawn(process.execPath, ['--no-warnings', '--loader', 'ts-node/esm', 'examples/demo.ts'], {
    env: { ...process.env, SLUICE_DEMO_METRICS_PORT: String(port), SLUICE_DEMO_SECONDS: String(SECONDS) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const stop = (): boolean => demo.kill('SIGTERM');
  process.once('SIGINT', stop);
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      demo.once('error', reject);
      demo.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`the demo exited with ${code}`);
  } finally {
    process.off('SIGINT', stop);
  }
}

/** Prometheus's graph page with the PANELS over the last `rangeS` seconds, as a PNG in `file`. */
function photograph(chromium: string, prometheus: PrometheusServer, rangeS: number, file: string): void {
  const params = new URLSearchParams();
  PANELS.forEach((expr, i) => {
    for (const [name, value] of Object.entries({ expr, tab: '0', range_input: `${rangeS}s`, step_input: '1' }))
      params.set(`g${i}.${name}`, value);
  });
  const profile = mkdtempSync(path.join(tmpdir(), 'sluice-chromium-'));
  try {
    const shot = spawnSync(
      chromium,
      [
        '--headless',
        '--no-sandbox', // it shows a page of our own Prometheus on loopback; as root it runs only so
        '--disable-gpu',
        '--hide-scrollbars',
        `--user-data-dir=${profile}`,
        `--window-size=${WIDTH},${HEIGHT}`,
        '--virtual-time-budget=10000', // time for the page's scripts to query Prometheus and draw
        `--screenshot=${file}`,
        `${prometheus.url}/graph?${params.toString()}`,
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    if (shot.status !== 0) throw new Error(`chromium failed (${shot.status}): ${shot.stderr}`);
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

const found = findPrometheus({ ui: true });
if ('reason' in found) throw new Error(found.reason);
const chromium = findChromium();
const port = await freePort();
const prometheus = await PrometheusServer.start(found.binary, `127.0.0.1:${port}`, 1000, found.web);
const work = mkdtempSync(path.join(tmpdir(), 'sluice-picture-'));
try {
  // Its first scrape comes a few seconds after its start (it fails: nothing listens yet): the demo starts after.
  await prometheus.until(async () => (await prometheus.query('up')).length > 0, 'a first scrape');
  const started = Date.now();
  say(`Prometheus at ${prometheus.url} scrapes 127.0.0.1:${port} every second; the demo runs for ${SECONDS} s`);
  await runDemo(port);
  const rangeS = Math.ceil((Date.now() - started) / 1000) + 2;
  const [scrapes] = await prometheus.query(`count_over_time(sluice_in_flight{subscriber="Billing.bill"}[${rangeS}s])`);
  if (scrapes === undefined || scrapes.value < SECONDS / 2)
    throw new Error(`Prometheus has ${scrapes?.value ?? 0} scrapes of the demo, expected about ${SECONDS}`);
  say(`${scrapes.value} scrapes of the demo; photographing the graph page`);
  const file = path.join(work, 'picture.png');
  photograph(chromium, prometheus, rangeS, file);
  copyFileSync(file, OUT);
  say(`wrote ${OUT} (${Math.round(statSync(OUT).size / 1024)} KB)`);
} finally {
  await prometheus.stop();
  rmSync(work, { recursive: true, force: true });
}
