/**
 * Headless Chromium for the tests that check what a person sees on a page: Debian's `chromium` package,
 * fetched once by scripts/chromium/fetch.mjs (or `chromium` on PATH).
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The browser's binary (or its launcher); fetches it on first use. */
export function findChromium(): string {
  const found = spawnSync(process.execPath, ['scripts/chromium/fetch.mjs'], {
    encoding: 'utf8',
    timeout: 600_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const binary = /CHROMIUM=(\S+)/.exec(found.stdout ?? '')?.[1];
  if (found.status !== 0 || !binary) throw new Error(`no Chromium: scripts/chromium/fetch.mjs failed: ${found.stderr}`);
  return binary;
}

/**
 * Opens `url` in headless Chromium (a fresh profile) and resolves with the page's DOM as it was rendered
 * (`--dump-dom`); with `screenshot`, also writes a PNG of what a window `width`×`height` shows. Asynchronous:
 * the page may be served by this very process.
 */
export async function openPage(
  chromium: string,
  url: string,
  options: { screenshot?: string; width?: number; height?: number } = {},
): Promise<string> {
  const profile = mkdtempSync(path.join(tmpdir(), 'sluice-chromium-'));
  const run = (extra: string[]): Promise<string> =>
    new Promise((resolve, reject) =>
      execFile(
        chromium,
        [
          '--headless',
          '--no-sandbox', // a page of the test's own on loopback; as root it runs only so
          '--disable-gpu',
          '--hide-scrollbars',
          `--user-data-dir=${profile}`,
          `--window-size=${options.width ?? 1100},${options.height ?? 900}`,
          ...extra,
          url,
        ],
        { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => (error ? reject(new Error(`chromium failed: ${stderr}`)) : resolve(stdout)),
      ),
    );
  try {
    const dom = await run(['--dump-dom']);
    if (options.screenshot !== undefined) await run([`--screenshot=${options.screenshot}`]);
    return dom;
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
