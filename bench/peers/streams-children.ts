/**
 * The instances of bench/peers/streams.ts: each side's driver as a child process (its own process group),
 * its stdout lines read into what the harness waits on — up, the input partitions it owns, when it read its
 * first event. Kafka Streams says `state <S>` and, when RUNNING, `assigned <p,…>`; Sluice says `ready`, then
 * `own <p>` / `release <p>` as shards serve and go. Both say `first <ms>`.
 *
 * A Sluice shard is owned by the instance that restored it last (its `openShard` fenced the one before). The
 * one before does not always say `release`: a partition taken away before it fetched any batch of it is
 * never revoked to the app (the consumer revokes the partitions it has feeds for), so its shard stays open,
 * fenced, on the old owner. So `own <p>` takes p from every other instance of the group.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ROOT } from './setup.js';

export interface Instance {
  readonly label: string;
  readonly process: ChildProcess;
  up: boolean;
  readonly owned: Set<number>;
  /** When `owned` or `up` last changed (ms). */
  changedAt: number;
  /** When this instance read its first input event (ms), if it has. */
  first?: number;
  /** The last lines of its stderr, for a failure's message. */
  stderr: string;
  exited: boolean;
}

const live = new Set<Instance>();

function onLine(c: Instance, group: readonly Instance[], line: string): void {
  if (process.env.BENCH_DEBUG) process.stderr.write(`  [${c.label}] ${line}\n`);
  const [what, a] = line.split(' ');
  const before = `${c.up}|${[...c.owned].join(',')}`;
  if (what === 'ready') c.up = true;
  else if (what === 'own') {
    c.owned.add(Number(a));
    for (const other of group) if (other !== c && other.owned.delete(Number(a))) other.changedAt = Date.now();
  } else if (what === 'release') c.owned.delete(Number(a));
  else if (what === 'state') {
    c.up = a === 'RUNNING';
    if (!c.up) c.owned.clear();
  } else if (what === 'assigned') {
    c.owned.clear();
    for (const p of a === '-' ? [] : a!.split(',')) c.owned.add(Number(p));
  } else if (what === 'first') c.first = Number(a);
  if (`${c.up}|${[...c.owned].join(',')}` !== before) c.changedAt = Date.now();
}

/** Starts an instance and adds it to `group` (the instances of one app). */
export function spawnInstance(
  group: Instance[],
  label: string,
  command: { cmd: string; args: string[] },
  env: Record<string, string>,
): Instance {
  const child = spawn(command.cmd, command.args, {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const c: Instance = {
    label,
    process: child,
    up: false,
    owned: new Set(),
    changedAt: Date.now(),
    stderr: '',
    exited: false,
  };
  live.add(c);
  group.push(c);
  createInterface({ input: child.stdout }).on('line', (line) => onLine(c, group, line));
  child.stderr.on('data', (d: Buffer) => {
    if (process.env.BENCH_DEBUG) process.stderr.write(d);
    c.stderr = (c.stderr + d.toString('utf8')).slice(-4_000);
  });
  child.on('exit', () => {
    c.exited = true;
    c.up = false;
    c.owned.clear();
    c.changedAt = Date.now();
    live.delete(c);
  });
  return c;
}

export function kill(c: Instance, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-c.process.pid!, signal);
  } catch {
    /* gone */
  }
}

/** SIGTERM (the framework's own stop), SIGKILL after `graceMs`; resolves once it exited. */
export async function stop(c: Instance, graceMs = 10_000): Promise<void> {
  if (c.exited) return;
  const exited = new Promise<void>((resolve) => c.process.once('exit', () => resolve()));
  kill(c, 'SIGTERM');
  const timer = setTimeout(() => kill(c), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Every instance up, owning a share of the partitions each (together all of them), unchanged for `quietMs`. */
export function steady(cs: readonly Instance[], partitions: number, quietMs = 2_000): boolean {
  const owned = cs.flatMap((c) => [...c.owned]);
  return (
    cs.every((c) => c.up && c.owned.size > 0) &&
    owned.length === partitions &&
    new Set(owned).size === partitions &&
    Date.now() - Math.max(...cs.map((c) => c.changedAt)) >= quietMs
  );
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until `ok()`, polling every 50 ms; throws naming `what` (and a dead instance's stderr) at `ms`. */
export async function until(ok: () => boolean, what: string, ms: number, cs: readonly Instance[] = []): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    const dead = cs.find((c) => c.exited && c.process.signalCode !== 'SIGKILL');
    if (dead) throw new Error(`${dead.label} exited while waiting for ${what}:\n${dead.stderr.slice(-1_500)}`);
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await sleep(50);
  }
}

/** Kills every instance still running (on the harness's exit or interrupt). */
export function killAll(): void {
  for (const c of live) kill(c);
}
