import type { LogEntry } from 'kafkajs';
import type { Logger } from '../../core/ports.js';
import { logLevel as KafkaLogLevel } from './kafkajs.js';

/** kafkajs's retried CONCURRENT_TRANSACTIONS answer, as its producer logs it. */
const CONCURRENT_TRANSACTIONS = /another concurrent operation on the same transaction/;

/**
 * Writes one line of kafkajs's own log to `log`. kafkajs logs every error answer of the broker as an error,
 * though it handles most itself: a group rebalancing is the normal course of a rebalance (debug); other
 * answers are warnings. Its failures that matter reach Sluice as errors or crashes, which are logged as errors.
 */
export function logKafkajs(log: Logger, { level, log: entry }: LogEntry): void {
  const { message, ...fields } = entry;
  if (level === KafkaLogLevel.ERROR && CONCURRENT_TRANSACTIONS.test(message)) {
    log.debug(message, fields); // a transaction begun while the last one's markers are written: retried at once
  } else if (level === KafkaLogLevel.ERROR && message.startsWith('Response ')) {
    if (/rebalanc/i.test(String((fields as { error?: unknown }).error))) log.debug(message, fields);
    else log.warn(message, fields);
  } else if (level === KafkaLogLevel.ERROR && message.startsWith('Crash: ')) {
    log.debug(message, fields); // Sluice logs the crash itself (once per row of crashes as an error)
  } else if (level === KafkaLogLevel.ERROR) log.error(message, fields);
  else if (level === KafkaLogLevel.WARN) log.warn(message, fields);
  else log.debug(message, fields);
}
