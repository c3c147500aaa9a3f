/**
 * Which logger a KafkaBroker writes to: the app's, unless it was given one of its own. No Kafka broker is
 * needed: the broker is pointed at a port nothing listens on, and kafkajs's refused connection is logged.
 */
import { describe, expect, it } from 'vitest';
import { App, memoryLogger, subscriber, type LogRecord } from '../../../src/index.js';
import { KafkaBroker } from '../../../src/brokers/kafka/index.js';

/** A broker no connection reaches, which gives up at once (no retries). */
const unreachable = (logger?: ReturnType<typeof memoryLogger>) =>
  new KafkaBroker({
    brokers: ['127.0.0.1:1'],
    kafkajs: { retry: { retries: 0 }, connectionTimeout: 1_000 },
    ...(logger && { logger }),
  });

const kafkaLines = (records: readonly LogRecord[]) => records.filter((r) => r.fields.broker === 'kafka');

describe('a KafkaBroker started by an app', () => {
  it('logs through the app logger, with the app name bound, when it has none of its own', async () => {
    const logger = memoryLogger();
    const app = new App({ name: 'billing', logger }).withBroker(unreachable(), (b) =>
      b.include(subscriber('orders', () => {}).build()),
    );
    await expect(app.start()).rejects.toThrow();
    const lines = kafkaLines(logger.records);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((r) => r.fields.app === 'billing')).toBe(true);
    expect(lines.some((r) => r.level === 'error')).toBe(true);
  });

  it('keeps the logger it was given', async () => {
    const own = memoryLogger();
    const appLogger = memoryLogger();
    const app = new App({ name: 'billing', logger: appLogger }).withBroker(unreachable(own), (b) =>
      b.include(subscriber('orders', () => {}).build()),
    );
    await expect(app.start()).rejects.toThrow();
    expect(kafkaLines(own.records).length).toBeGreaterThan(0);
    expect(kafkaLines(appLogger.records)).toEqual([]);
  });
});
