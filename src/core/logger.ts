import type { LogFields, Logger, LogLevel } from './ports.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Reads a level name, falling back to `fallback` for anything else. */
export function parseLogLevel(text: string | undefined, fallback: LogLevel): LogLevel {
  return text !== undefined && text in RANK ? (text as LogLevel) : fallback;
}

/**
 * The default logger: one JSON object per line on stderr, at `level` and above. The level comes from
 * `SLUICE_LOG_LEVEL` when not given (default `info`); the test setup sets it to `silent`.
 */
export function jsonLogger(options: { level?: LogLevel; fields?: LogFields; write?: (line: string) => void } = {}): Logger {
  const level = options.level ?? parseLogLevel(process.env.SLUICE_LOG_LEVEL, 'info');
  const write = options.write ?? ((line: string) => void process.stderr.write(line + '\n'));
  return new JsonLogger(RANK[level], options.fields ?? {}, write);
}

class JsonLogger implements Logger {
  constructor(
    private readonly min: number,
    private readonly bound: LogFields,
    private readonly write: (line: string) => void,
  ) {}

  debug(message: string, fields?: LogFields): void { this.log('debug', message, fields); }
  info(message: string, fields?: LogFields): void { this.log('info', message, fields); }
  warn(message: string, fields?: LogFields): void { this.log('warn', message, fields); }
  error(message: string, fields?: LogFields): void { this.log('error', message, fields); }

  child(fields: LogFields): Logger {
    return new JsonLogger(this.min, { ...this.bound, ...fields }, this.write);
  }

  private log(level: LogLevel, message: string, fields: LogFields | undefined): void {
    if (RANK[level] < this.min) return;
    const line = { time: new Date().toISOString(), level, msg: message, ...this.bound, ...fields };
    this.write(JSON.stringify(line, (_k, v: unknown) => (v instanceof Error ? { message: v.message, stack: v.stack } : v)));
  }
}
