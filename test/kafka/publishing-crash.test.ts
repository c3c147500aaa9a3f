/** A publishTo chain across crashes on kafkajs (see ./publishing-crash.ts): six kills a test. */
import { kafkajsClient } from './clients.js';
import { publishingCrashSuite } from './publishing-crash.js';

publishingCrashSuite(kafkajsClient, 6);
