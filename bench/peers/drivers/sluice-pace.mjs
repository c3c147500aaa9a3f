// Sluice driver for bench/peers/streams.ts, beside drivers/KafkaStreamsDriver.java: one instance of an app
// (from dist/) whose paced subscriber reads the input topic through a KafkaBroker and journals its pace state
// in kafkaStore({ ownership: 'partition', shards: <partitions> }), the system clock. Spec in STREAMS_SPEC
// (the JSON the Java driver reads):
//   { brokers, input, output, app, mode: "debounce" | "batch", gapMs, batchSize, partitions, prefix,
//     sessionTimeoutMs, tickPrefix }
//  debounce: pace({ debounce: gapMs }): a key's run starts gapMs after its latest event (on the clock of the
//            instance that took it), with the latest event and ctx.run.size.
//  batch:    pace({ batch: { max: batchSize, wait: '1 minute' } }): a run at batchSize events (the wait is
//            longer than a failover, so no batch closes on time in the benchmark).
// Each run of a key not starting with tickPrefix publishes its result on `output` with ctx.publish:
// {"key","id","count","lastSeq","lastTs","seqs"?}, id being ctx.run.id, the same on every attempt. The
// subscriber is marked exactlyOnce (unless spec.atLeastOnce): the result commits with the run's done record,
// in the Kafka store's transaction of the run's shard, so a run killed after it published is not read twice.
// With spec.atLeastOnce the result is published at once (acks -1), before the done record.
// Lines on stdout, written synchronously (none is lost at a SIGKILL), times in ms:
//   ready <ms>             app.start() resolved
//   own <p> <ms>           shard p restored and serving here; release <p> <ms> when it is handed over
//   first <ms>             the first event appended to this instance's shards
// bench/pace-failover-child.mjs is the same app shape for bench/kafka-pace's failover figure, without output.
import { writeSync } from 'node:fs';
import { App, jsonLogger, silentLogger, subscriber } from '../../../dist/index.js';
import { KafkaBroker, kafkaStore } from '../../../dist/brokers/kafka/index.js';

const spec = JSON.parse(process.env.STREAMS_SPEC);
// SLUICE_LOG_LEVEL=debug (or info, warn) shows Sluice's own log on stderr.
const logger = process.env.SLUICE_LOG_LEVEL ? jsonLogger() : silentLogger;

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

/** The Kafka store, telling the parent which shards serve here and when the first event was appended. */
function reportingStore() {
  const inner = kafkaStore({
    brokers: spec.brokers,
    prefix: spec.prefix,
    shards: spec.partitions,
    replicationFactor: 1,
    ownership: 'partition',
    logger,
  });
  let first = true;
  const counted = (log) => {
    const append = log.append.bind(log);
    log.append = (record, alongside) => {
      if (first) {
        first = false;
        out(`first ${Date.now()}`);
      }
      return append(record, alongside);
    };
    return log;
  };
  return {
    shards: inner.shards,
    ownership: inner.ownership,
    publishes: inner.publishes,
    clusterId: () => inner.clusterId(),
    snapshotEvery: inner.snapshotEvery,
    open: () => inner.open(),
    close: () => inner.close(),
    log: (shard) => inner.log(shard),
    openShard: async (shard) => {
      const log = counted(await inner.openShard(shard));
      out(`own ${shard} ${Date.now()}`);
      return log;
    },
    closeShard: async (shard) => {
      out(`release ${shard} ${Date.now()}`);
      await inner.closeShard(shard);
    },
  };
}

const result = (ctx, key, value) => ctx.publish(spec.output, value, { key });

const handler =
  spec.mode === 'debounce'
    ? async (latest, ctx) => {
        if (ctx.run.key.startsWith(spec.tickPrefix)) return;
        const { key, id, size } = ctx.run;
        await result(ctx, key, { key, id, count: size, lastSeq: latest.seq, lastTs: latest.ts });
      }
    : async (events, ctx) => {
        if (ctx.run.key.startsWith(spec.tickPrefix)) return;
        const { key, id } = ctx.run;
        const last = events[events.length - 1];
        const seqs = events.map((e) => e.seq);
        await result(ctx, key, { key, id, count: events.length, lastSeq: last.seq, lastTs: last.ts, seqs });
      };
const pace = spec.mode === 'debounce' ? { debounce: spec.gapMs } : { batch: { max: spec.batchSize, wait: '1 minute' } };

const broker = new KafkaBroker({
  brokers: spec.brokers,
  logger,
  consumer: {
    sessionTimeoutMs: spec.sessionTimeoutMs,
    heartbeatIntervalMs: 500,
    rebalanceTimeoutMs: 10_000,
    maxWaitTimeMs: 100,
    commitIntervalMs: 200,
  },
});
const app = new App({ name: spec.app, logger, store: reportingStore(), shutdownTimeoutMs: 5_000 });
const paced = subscriber(spec.input, handler).name('p').workers(32).pace(pace);
app.withBroker(broker, (b) => b.include((spec.atLeastOnce ? paced : paced.exactlyOnce()).build()));
process.on('SIGTERM', () => {
  void app.stop().finally(() => process.exit(0));
});
await app.start();
out(`ready ${Date.now()}`);
// The system clock's timers do not keep Node alive; this does, until the parent ends the child.
setInterval(() => {}, 1 << 30);
