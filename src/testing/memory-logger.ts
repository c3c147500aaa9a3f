import type { LogFields, Logger, LogLevel } from '../core/ports.js';

/**
 * A logged line, as {@link memoryLogger} keeps it.
 *
 * @category Testing
 */
export interface LogRecord {
  /** `debug`, `info`, `warn` or `error`. */
  readonly level: Exclude<LogLevel, 'silent'>;
  /** The line's message: `handler failed`, `delivery dead-lettered`, and so on. */
  readonly message: string;
  /** The fields bound by `child` (`app`, `subscriber`, `topic`) and the line's own. */
  readonly fields: LogFields;
}

/**
 * A logger that keeps every line in `records`, for tests that assert what was logged. Its children share
 * the same array.
 *
 * @param records - where lines are kept (default: a new array).
 * @param bound - fields bound to every line (default: none).
 *
 * @example
 * ```ts
 * const logger = memoryLogger();
 * const app = new App({ name: 'billing', logger });
 * // ...
 * expect(logger.records.some((r) => r.level === 'warn' && r.message === 'handler failed')).toBe(true);
 * ```
 *
 * @category Testing
 */
export function memoryLogger(
  records: LogRecord[] = [],
  bound: LogFields = {},
): Logger & {
  /** Every line logged through this logger and its children, oldest first. */
  readonly records: LogRecord[];
} {
  const log = (level: LogRecord['level']) => (message: string, fields?: LogFields) =>
    void records.push({ level, message, fields: { ...bound, ...fields } });
  return {
    records,
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    child: (fields) => memoryLogger(records, { ...bound, ...fields }),
  };
}

/**
 * A logger that drops everything.
 *
 * @category Testing
 */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};
