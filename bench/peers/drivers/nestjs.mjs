// NestJS microservices with its Kafka transport (ServerKafka, on kafkajs): one @EventPattern handler in a
// controller. ServerKafka runs kafkajs eachMessage and awaits the handler, so a partition is handled one
// message at a time; its only concurrency setting is run.partitionsConsumedConcurrently (across partitions).
// Nest is loaded from the peers cache (PEER_NEST_MODULES: <cache>/peers/npm/node_modules), not from the repo.
import { createRequire } from 'node:module';
import path from 'node:path';
import { ready, report, sleep, spec, tracker } from './common.mjs';

const require = createRequire(path.join(process.env.PEER_NEST_MODULES, 'noop.js'));
require('reflect-metadata');
const { NestFactory } = require('@nestjs/core');
const { Controller, Module } = require('@nestjs/common');
const { EventPattern, Payload, Transport } = require('@nestjs/microservices');

const t = tracker();
const handle = spec.sleepMs > 0 ? () => sleep(spec.sleepMs) : async () => {};

// Plain JavaScript: the decorators are applied by hand, as TypeScript would emit them.
class BenchController {
  async onMessage(value) {
    const v = t.begin(value); // decoded by Nest (JSON)
    await handle(v);
    t.end(v);
  }
}
Payload()(BenchController.prototype, 'onMessage', 0);
EventPattern(spec.topic)(
  BenchController.prototype,
  'onMessage',
  Object.getOwnPropertyDescriptor(BenchController.prototype, 'onMessage'),
);
Controller()(BenchController);
class BenchModule {}
Module({ controllers: [BenchController] })(BenchModule);

const app = await NestFactory.createMicroservice(BenchModule, {
  logger: ['error'],
  transport: Transport.KAFKA,
  options: {
    postfixId: '',
    client: { clientId: 'peer-nestjs', brokers: spec.brokers, logLevel: 0 },
    consumer: { groupId: spec.group, maxWaitTimeInMs: 100 },
    subscribe: { fromBeginning: true },
    run: { partitionsConsumedConcurrently: spec.partitions },
  },
});
await app.listen();
ready();
await t.done;
await app.close();
await report(t.result({ system: 'nestjs' }));
process.exit(0);
