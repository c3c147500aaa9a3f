/**
 * Vitest global setup: finds a Kafka broker for the Kafka suites. KAFKA_BROKERS wins; otherwise the
 * repository's script starts one (fetching Kafka with Maven on first use). Under CI=true the Kafka suites
 * must run, so a failure here fails the run; elsewhere they are skipped with a one-line reason.
 */
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string | undefined;
    kafkaSkipReason: string | undefined;
  }
}

const answers = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(1_000, () => (socket.destroy(), resolve(false)));
    socket.on('connect', () => (socket.destroy(), resolve(true)));
    socket.on('error', () => resolve(false));
  });

let startedHere = false;

export async function setup(project: TestProject): Promise<void> {
  if (process.env.KAFKA_BROKERS) {
    project.provide('kafkaBrokers', process.env.KAFKA_BROKERS);
    project.provide('kafkaSkipReason', undefined);
    return;
  }
  const running = await answers('127.0.0.1', 9092);
  const started = spawnSync(process.execPath, ['scripts/kafka/start.mjs', '--fresh'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
  const address = /KAFKA_BROKERS=(\S+)/.exec(started.stdout ?? '')?.[1];
  if (started.status === 0 && address) {
    startedHere = !running;
    project.provide('kafkaBrokers', address);
    project.provide('kafkaSkipReason', undefined);
    return;
  }
  const reason = `no Kafka broker: scripts/kafka/start.mjs failed (${(started.stderr ?? '').trim().split('\n').slice(-3).join(' | ') || started.error?.message})`;
  if (process.env.CI === 'true') throw new Error(`${reason}. Under CI the Kafka suites must run.`);
  project.provide('kafkaBrokers', undefined);
  project.provide('kafkaSkipReason', reason);
}

export async function teardown(): Promise<void> {
  // A broker this run started is stopped again under CI; on a workstation it stays up for the next run.
  if (startedHere && process.env.CI === 'true') spawnSync(process.execPath, ['scripts/kafka/stop.mjs'], { stdio: 'inherit' });
}
