import type { LogFields, Logger, LogLevel } from '../core/ports.js';

/** A logged line, as {@link memoryLogger} keeps it. */
export interface LogRecord {
  readonly level: Exclude<LogLevel, 'silent'>;
  readonly message: string;
  readonly fields: LogFields;
}

/** A logger that keeps every line in `records`, for tests that assert what was logged. */
export function memoryLogger(records: LogRecord[] = [], bound: LogFields = {}): Logger & { readonly records: LogRecord[] } {
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

/** A logger that drops everything. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};
