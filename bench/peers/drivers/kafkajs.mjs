// Raw kafkajs 2.2.4, the loop a team writes by hand. No-op handler (sleepMs 0): eachBatch over the
// partitions concurrently, decode, await the handler, resolveOffset. With a sleeping handler: eachMessage, one
// message at a time per partition (kafkajs has no setting for concurrency inside a partition).
import { Kafka, logLevel } from 'kafkajs';
import { ready, report, sleep, spec, tracker } from './common.mjs';

const t = tracker();
const kafka = new Kafka({ clientId: 'peer-kafkajs', brokers: spec.brokers, logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: spec.group, maxWaitTimeInMs: 100 });
const handle = spec.sleepMs > 0 ? () => sleep(spec.sleepMs) : async () => {};
await consumer.connect();
await consumer.subscribe({ topic: spec.topic, fromBeginning: true });
const joined = new Promise((r) => consumer.on(consumer.events.GROUP_JOIN, r));
if (spec.sleepMs === 0) {
  await consumer.run({
    partitionsConsumedConcurrently: spec.partitions,
    // Off: with kafkajs's default (true) the loop below, as kafkajs's docs write it, loses messages on stop
    // (the rest of a batch left at !isRunning() is resolved, and committed, when eachBatch returns).
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      for (const message of batch.messages) {
        if (!isRunning() || isStale()) break;
        const v = t.begin(message.value);
        await handle(v);
        t.end(v);
        resolveOffset(message.offset);
      }
      await heartbeat();
    },
  });
} else {
  await consumer.run({
    eachMessage: async ({ message }) => {
      const v = t.begin(message.value);
      await handle(v);
      t.end(v);
    },
  });
}
await joined;
ready();
await t.done;
await consumer.disconnect();
await report(t.result({ system: 'kafkajs' }));
process.exit(0);
