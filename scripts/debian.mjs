// Debian packages for the tools the tests and the doc generators run (Prometheus, Chromium), fetched without
// installing anything: `apt-get download` (no root needed beyond what it asks) and `dpkg -x` into a directory
// of the cache, ${SLUICE_CACHE:-~/.cache/sluice}/<name>. Used by scripts/prometheus/fetch.mjs and
// scripts/chromium/fetch.mjs.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The directory of the cache that holds `name` (made by whoever unpacks into it). */
export const cacheDir = (name) =>
  path.join(process.env.SLUICE_CACHE || path.join(os.homedir(), '.cache', 'sluice'), name.replace(/[^\w.+-]/g, '_'));

/** Runs a command, its output captured. */
export const run = (cmd, args, cwd) =>
  spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** Whether the package is installed on this machine. */
export const installed = (name) => /ok installed/.test(run('dpkg-query', ['-W', '-f=${Status}', name]).stdout ?? '');

/** The version apt would download of the package (its candidate), or undefined when apt knows none. */
export function candidate(name) {
  const policy = run('apt-cache', ['policy', name]).stdout ?? '';
  const version = /Candidate: (\S+)/.exec(policy)?.[1];
  return version && version !== '(none)' ? version : undefined;
}

/**
 * The package's dependencies (Depends and Pre-Depends) as `apt-cache depends` tells them: one list per
 * dependency, its alternatives in order; a virtual package is written `<name>`.
 */
export function dependsOf(spec) {
  const out =
    run('apt-cache', [
      'depends',
      '--no-recommends',
      '--no-suggests',
      '--no-conflicts',
      '--no-breaks',
      '--no-replaces',
      '--no-enhances',
      spec,
    ]).stdout ?? '';
  const groups = [];
  let group = [];
  for (const line of out.split('\n')) {
    const m = /^ ([ |])(?:Pre)?Depends: (\S+)/.exec(line);
    if (!m) continue;
    group.push(m[2]);
    if (m[1] === ' ') {
      groups.push(group);
      group = [];
    }
  }
  return groups;
}

/**
 * `roots` and, transitively, the dependencies that `follow(name)` accepts. Only a dependency with one
 * alternative, a real package, is followed: one with alternatives is left to the machine (what the tools
 * need runs without it; each fetch script checks what it unpacked).
 */
export function withDependencies(roots, follow) {
  const seen = new Set();
  const queue = [...roots];
  const out = [];
  while (queue.length > 0) {
    const spec = queue.shift();
    const name = spec.split('=')[0];
    if (seen.has(name)) continue;
    seen.add(name);
    out.push(spec);
    for (const group of dependsOf(spec))
      if (group.length === 1 && !group[0].startsWith('<') && !seen.has(group[0]) && follow(group[0]))
        queue.push(group[0]);
  }
  return out;
}

/**
 * Downloads the packages (`name` or `name=version`) and unpacks each into `into`. Runs `apt-get update` once
 * when apt does not know one of them. Returns undefined, or what failed.
 */
export function downloadAndUnpack(specs, into, say) {
  fs.mkdirSync(into, { recursive: true });
  const work = fs.mkdtempSync(path.join(into, 'download-'));
  try {
    let got = run('apt-get', ['download', ...specs], work);
    if (got.status !== 0) {
      say('not all in the package lists: running apt-get update once');
      run('apt-get', ['update', '-qq'], work);
      got = run('apt-get', ['download', ...specs], work);
    }
    const debs = fs.readdirSync(work).filter((f) => f.endsWith('.deb'));
    if (got.status !== 0 || debs.length < specs.length)
      return `apt-get download ${specs.join(' ')} failed: ${(got.stderr || got.error?.message || '').trim()}`;
    for (const deb of debs) {
      const unpacked = run('dpkg', ['-x', path.join(work, deb), into]);
      if (unpacked.status !== 0)
        return `dpkg -x ${deb} failed: ${(unpacked.stderr || unpacked.error?.message || '').trim()}`;
    }
    return undefined;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The symbolic links under `dir` whose target is not there. */
export function danglingLinks(dir) {
  const out = [];
  const walk = (d) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isSymbolicLink()) {
        if (!fs.existsSync(p)) out.push(p);
      } else if (entry.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}
