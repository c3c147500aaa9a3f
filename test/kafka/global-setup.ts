/**
 * Vitest global setup: finds a Kafka broker for the Kafka suites. KAFKA_BROKERS wins; otherwise the
 * repository's script starts one (fetching Kafka with Maven on first use). Under CI=true the Kafka suites
 * must run, so a failure here fails the run; elsewhere they are skipped with a one-line reason.
 */
import { spawnSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string | undefined;
    kafkaSkipReason: string | undefined;
  }
}

/** Set when this run's start.mjs started the broker (rather than finding one already up). */
let startedHere = false;

export async function setup(project: TestProject): Promise<void> {
  if (process.env.KAFKA_BROKERS) {
    project.provide('kafkaBrokers', process.env.KAFKA_BROKERS);
    project.provide('kafkaSkipReason', undefined);
    return;
  }
  // start.mjs honours KAFKA_PORT (inherited with the environment) and reuses a broker already answering there;
  // it says on stderr whether it started one, so a broker another run started (or is starting) is never ours.
  const started = spawnSync(process.execPath, ['scripts/kafka/start.mjs', '--fresh'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 600_000,
  });
  const address = /KAFKA_BROKERS=(\S+)/.exec(started.stdout ?? '')?.[1];
  if (started.status === 0 && address) {
    startedHere = /started broker pid \d+/.test(started.stderr ?? '');
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
  // A broker this run started is stopped again under CI (stop.mjs finds it by the same KAFKA_PORT); on a
  // workstation it stays up for the next run. A broker this run found running is never stopped.
  if (startedHere && process.env.CI === 'true')
    spawnSync(process.execPath, ['scripts/kafka/stop.mjs'], { stdio: 'inherit' });
}
