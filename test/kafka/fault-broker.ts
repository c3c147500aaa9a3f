/**
 * A Kafka broker of a test's own, beside the shared one, that the test can hurt: SIGKILL it, pause it
 * (SIGSTOP) and let it go on (SIGCONT), and start it again on the same data directory. It is started by
 * scripts/kafka/start.mjs on ports of its own (its own data directory too), from the same Maven-fetched
 * Kafka distribution, so nothing a test does to it disturbs the other suites.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const POM = path.resolve('scripts/kafka/pom.xml');

/** Whether this machine can run a broker of a test's own (Java on PATH). Under CI it must. */
export const canRunOwnBroker =
  spawnSync('java', ['-version'], { stdio: 'ignore' }).error === undefined || process.env.CI === 'true';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')); // a zombie is dead
  } catch {
    return true;
  }
}

/**
 * The port of a suite's own broker: the environment variable `name` when set, else `fallback`. Two runs of
 * the Kafka suites on one machine (another checkout, or a CI run beside a developer's) each set their own.
 */
export function ownBrokerPort(name: string, fallback: number): number {
  const set = process.env[name];
  if (set === undefined || set === '') return fallback;
  const port = Number(set);
  if (!Number.isInteger(port) || port < 1 || port > 65_534)
    throw new Error(`${name}=${set} is not a port (the controller takes port + 1)`);
  return port;
}

export class FaultBroker {
  /** `127.0.0.1:<port>`, once started. */
  address = '';
  private readonly env: NodeJS.ProcessEnv;
  private readonly pidFile: string;

  /** `port` and `port + 1` (the controller) must be free and used by no other suite. */
  constructor(readonly port: number) {
    this.env = { ...process.env, KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(port + 1) };
    const version = /<kafka\.version>([^<]+)</.exec(fs.readFileSync(POM, 'utf8'))![1];
    const cache = path.join(
      process.env.SLUICE_CACHE || path.join(os.homedir(), '.cache', 'sluice'),
      `kafka-${version}`,
    );
    this.pidFile = path.join(cache, `broker-${port}`, 'kafka.pid');
  }

  /**
   * Starts the broker and resolves once it serves groups and producers. `fresh`: on an empty data
   * directory (the first start of a suite); otherwise on the data it had (a restart after a kill).
   */
  async start(fresh = false): Promise<string> {
    // Not execFileSync: the apps under test go on running in this process while the broker starts.
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['scripts/kafka/start.mjs', ...(fresh ? ['--fresh'] : [])],
        { env: this.env, encoding: 'utf8' },
        (error, stdout, stderr) =>
          error
            ? reject(new Error(`start.mjs failed: ${stderr.trim().split('\n').slice(-5).join(' | ')}`))
            : resolve(stdout),
      ),
    );
    this.address = /KAFKA_BROKERS=(\S+)/.exec(out)![1]!;
    return this.address;
  }

  /** The broker's JVM process id (0 when none runs). */
  pid(): number {
    try {
      const pid = Number(fs.readFileSync(this.pidFile, 'utf8').trim());
      return pid && alive(pid) ? pid : 0;
    } catch {
      return 0;
    }
  }

  /** SIGKILL: the broker dies at once, mid-request, as in a power cut of its machine. Resolves once it is gone. */
  async kill(): Promise<void> {
    const pid = this.pid();
    if (!pid) return;
    this.signal(pid, 'SIGCONT'); // a paused broker dies as well, but only once it runs again on some kernels
    this.signal(pid, 'SIGKILL');
    while (alive(pid)) await new Promise<void>((resolve) => setTimeout(resolve, 20));
  }

  /** SIGSTOP: the broker holds every connection open and answers nothing (a network stall). */
  pause(): void {
    const pid = this.pid();
    if (pid) this.signal(pid, 'SIGSTOP');
  }

  /** SIGCONT: a paused broker goes on. */
  resume(): void {
    const pid = this.pid();
    if (pid) this.signal(pid, 'SIGCONT');
  }

  /** Stops the broker for good (at the end of a suite). */
  stop(): void {
    this.resume();
    execFileSync(process.execPath, ['scripts/kafka/stop.mjs'], {
      env: { ...this.env, KAFKA_STOP_TIMEOUT_MS: '5000' },
      stdio: 'ignore',
    });
  }

  private signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(-pid, signal); // its process group: start.mjs runs it detached
    } catch {
      try {
        process.kill(pid, signal);
      } catch {
        // gone already
      }
    }
  }
}

/** Fails if `work` has not settled once `ms` passed: a guard against a hang, far above what it should take. */
export async function guard<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms} ms`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
