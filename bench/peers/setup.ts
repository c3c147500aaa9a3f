/**
 * What bench/peers/run.ts and bench/peers/streams.ts share to set their peers up: the cache they install into
 * (`${SLUICE_CACHE:-~/.cache/sluice}/peers`, never the repository), a command runner, and the Java side — the
 * jars of pom.xml fetched by Maven into `<cache>/java/lib`, and a driver of drivers/ compiled once into
 * `<cache>/java/classes/<Driver>` (the source launcher would compile inside the measured process).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
export const CACHE = path.join(process.env.SLUICE_CACHE || path.join(os.homedir(), '.cache', 'sluice'), 'peers');
const LIB = path.join(CACHE, 'java', 'lib');

export const driver = (file: string): string => path.join(HERE, 'drivers', file);

/** Runs a command to its end (15 minutes at most); `out` is the last 15 lines of its output. */
export function sh(cmd: string, args: string[], opts: { cwd?: string } = {}): { ok: boolean; out: string } {
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd ?? ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 900_000,
  });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`;
  return { ok: r.status === 0, out: out.trim().split('\n').slice(-15).join('\n') };
}

/**
 * The jars of pom.xml in `<cache>/java/lib`, fetched again (all of them) unless a jar starting with each of
 * `needed` is there already (a cache from before a dependency was added to the pom). Undefined when done,
 * else why not.
 */
function fetchJars(needed: readonly string[], say: (msg: string) => void): string | undefined {
  const have = fs.existsSync(LIB) ? fs.readdirSync(LIB) : [];
  if (needed.every((prefix) => have.some((f) => f.startsWith(prefix)))) return undefined;
  say(`fetching bench/peers/pom.xml's jars into ${LIB} (Maven Central)`);
  const tmp = `${LIB}.tmp-${process.pid}`;
  const r = sh('mvn', [
    '-q',
    '-B',
    '-Dstyle.color=never',
    '-f',
    path.join(HERE, 'pom.xml'),
    'dependency:copy-dependencies',
    `-DoutputDirectory=${tmp}`,
  ]);
  if (!r.ok) {
    fs.rmSync(tmp, { recursive: true, force: true });
    return `mvn dependency:copy-dependencies failed:\n${r.out}`;
  }
  fs.rmSync(LIB, { recursive: true, force: true });
  fs.renameSync(tmp, LIB);
  return undefined;
}

/** drivers/<className>.java compiled into its classes directory, again whenever the source changed. */
function compile(className: string): string | undefined {
  const classes = classesOf(className);
  const src = driver(`${className}.java`);
  const stamp = path.join(classes, '.source-mtime');
  const mtime = String(fs.statSync(src).mtimeMs);
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === mtime) return undefined;
  fs.rmSync(classes, { recursive: true, force: true });
  fs.mkdirSync(classes, { recursive: true });
  const r = sh('javac', ['-d', classes, '-cp', path.join(LIB, '*'), src]);
  if (!r.ok) return `javac of drivers/${className}.java failed:\n${r.out}`;
  fs.writeFileSync(stamp, mtime);
  return undefined;
}

const classesOf = (className: string): string => path.join(CACHE, 'java', 'classes', className);

/** Jars and the compiled driver, ready to run; undefined when they are, else why not. */
export function setupJavaDriver(
  className: string,
  neededJars: readonly string[],
  say: (msg: string) => void,
): string | undefined {
  fs.mkdirSync(path.join(CACHE, 'java'), { recursive: true });
  return fetchJars(neededJars, say) ?? compile(className);
}

/** `java` and its arguments to run a compiled driver, with `jvmArgs` before the class. */
export function javaCommand(className: string, jvmArgs: readonly string[] = []): { cmd: string; args: string[] } {
  return { cmd: 'java', args: [...jvmArgs, '-cp', `${classesOf(className)}:${path.join(LIB, '*')}`, className] };
}
