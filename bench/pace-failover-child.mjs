// A child of bench/kafka-pace (c): one instance of an app with a batch-paced subscriber on Kafka, its store
// owned by partition. The parent runs two, sends events to every partition, SIGKILLs one and reads the
// survivor's lines. Imports dist/ (`npm run build` first). Every line is written synchronously, with the
// wall-clock time in milliseconds:
//
//   node bench/pace-failover-child.mjs <brokers> <topic> <prefix> <app name> <partitions> <session timeout ms>
//
//   started <ms>                  app.start() resolved
//   own <partition> <ms>          the partition's shard is restored and serves here
//   release <partition> <ms>      the partition's shard is being handed over
//   run <ms> <key> <events>       a run began on this instance
import { writeSync } from 'node:fs';
import { App, silentLogger, subscriber } from '../dist/index.js';
import { KafkaBroker, kafkaStore } from '../dist/brokers/kafka/index.js';

const [brokers, topic, prefix, name, partitions, sessionTimeout] = process.argv.slice(2);
/** Writes a line at once; a pipe that is full for a moment is written again. */
function out(line) {
  const bytes = Buffer.from(`${line}\n`);
  for (let off = 0; off < bytes.length;) {
    try {
      off += writeSync(1, bytes, off);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
    }
  }
}

const kafka = kafkaStore({
  brokers: [brokers],
  prefix,
  shards: Number(partitions),
  replicationFactor: 1,
  ownership: 'partition',
  logger: silentLogger,
});
/** The store, telling the parent when a shard starts serving here and when it goes. */
const store = {
  shards: kafka.shards,
  ownership: kafka.ownership,
  snapshotEvery: kafka.snapshotEvery,
  open: () => kafka.open(),
  close: () => kafka.close(),
  log: (shard) => kafka.log(shard),
  openShard: async (shard) => {
    const log = await kafka.openShard(shard);
    out(`own ${shard} ${Date.now()}`);
    return log;
  },
  closeShard: async (shard) => {
    out(`release ${shard} ${Date.now()}`);
    await kafka.closeShard(shard);
  },
};
const broker = new KafkaBroker({
  brokers: [brokers],
  logger: silentLogger,
  consumer: {
    sessionTimeoutMs: Number(sessionTimeout),
    heartbeatIntervalMs: 500,
    rebalanceTimeoutMs: 10_000,
    maxWaitTimeMs: 100,
    commitIntervalMs: 200,
  },
});
const app = new App({ name, logger: silentLogger, store, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) =>
  b.include(
    subscriber(topic, (events, ctx) => out(`run ${Date.now()} ${ctx.run.key} ${events.length}`))
      .name('p')
      .workers(4)
      .pace({ batch: { wait: 200 } })
      .build(),
  ),
);
process.on('SIGTERM', () => {
  void app.stop().finally(() => process.exit(0));
});
await app.start();
out(`started ${Date.now()}`);
// The system clock's timers do not keep Node alive; this does, until the parent ends the child.
setInterval(() => {}, 1 << 30);
