/** `require('sluice/kafka')`: the Kafka broker's ES module entry, loaded by require(esm) (see ./load.cts). */
import { requireEsm } from './load.cjs';

requireEsm('sluice/kafka', () => require('../brokers/kafka/index.js'));
export * from '../brokers/kafka/index.js';
