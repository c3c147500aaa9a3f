/**
 * The `sluice` command on the real broker, in child processes: `publish` goes through the app's Kafka broker
 * with its key and headers; `run --reload` restarts the app on a change made while messages flow, and the
 * graceful stop between the two runs loses nothing and hands nothing committed to the new run again.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { Sluice, sluice } from '../cli/child.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

const APP = 'test/fixtures/cli/kafka-app.mjs';
const N = 300;

describe.skipIf(!kafkaBrokers)('sluice on Kafka', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-cli-kafka-'));
  const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  afterAll(async () => {
    await producer.disconnect();
    await closeAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('run --reload: a change while messages flow restarts the app; each message is handled once', async () => {
    const topic = uniquePrefix('cli-reload');
    await testKafka().createTopic(topic, 3);
    await producer.connect();
    const env = { KAFKA_BROKERS: kafkaBrokers!, SLUICE_CLI_TOPIC: topic };
    const run = new Sluice(['run', APP, '--reload', '--watch', dir], env);
    await run.lines(/^ready$/);
    const send = (from: number, to: number) =>
      producer.send({
        topic,
        messages: Array.from({ length: to - from }, (_, i) => ({
          key: `k${(from + i) % 17}`,
          value: JSON.stringify({ id: `m${from + i}` }),
        })),
      });
    for (let at = 0; at < N / 2; at += 10) await send(at, at + 10);
    await run.lines(/^handled /, 20); // flowing
    writeFileSync(path.join(dir, 'handlers.mjs'), 'export const changed = 1;\n');
    // More goes out while the first run drains and stops, and the rest once it has stopped.
    for (let at = N / 2; at < N - 50; at += 10) await send(at, at + 10);
    await run.lines(/^stopped$/);
    for (let at = N - 50; at < N; at += 10) await send(at, at + 10);
    await run.lines(/^ready$/, 2); // started again
    // Published through the command, into the running app, with a key and a header.
    const published = await sluice(
      ['publish', APP, topic, '{"id":"by-cli"}', '--key', 'k-cli', '--header', 'h=v'],
      env,
    );
    expect(published.code, published.stderr).toBe(0);
    await run.lines(/^handled /, N + 1);
    expect(await run.stop()).toBe(0);
    const handled = run.stdout.filter((l) => l.startsWith('handled ')).map((l) => l.split(' ')[1]!);
    const first = run.stdout.indexOf('stopped');
    const byFirst = run.stdout.slice(0, first).filter((l) => l.startsWith('handled ')).length;
    console.log(`sluice run --reload: ${byFirst} of ${N + 1} handled by the first run, the rest by the second`);
    expect(byFirst).toBeGreaterThan(0);
    expect(byFirst).toBeLessThan(N + 1);
    expect(run.stdout.filter((l) => /^(ready|stopped)$/.test(l))).toEqual(['ready', 'stopped', 'ready', 'stopped']);
    expect(new Set(handled).size).toBe(N + 1); // nothing lost
    expect(handled).toHaveLength(N + 1); // nothing handled twice
    expect(run.stdout).toContain('handled by-cli key=k-cli h=v');
  });
});
