import type { LogFields, Logger, LogLevel } from './ports.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Reads a level name, falling back to `fallback` for anything else. */
export function parseLogLevel(text: string | undefined, fallback: LogLevel): LogLevel {
  return text !== undefined && text in RANK ? (text as LogLevel) : fallback;
}

/**
 * The default logger: one JSON object per line on stderr (`time`, `level`, `msg`, then the fields), at
 * `level` and above. The level comes from `SLUICE_LOG_LEVEL` when not given (`debug`, `info`, `warn`,
 * `error` or `silent`; default `info`).
 *
 * It never throws: any field value is written (a BigInt as its digits and `n`, a cycle as `"[Circular]"`, an error
 * as its name, message, stack and cause), and a `write` that throws loses the line, not the caller.
 *
 * @param options - `level`: the lowest level written; `fields`: bound to every line; `write`: where each
 *   line goes (default: stderr).
 *
 * @example
 * ```ts
 * const app = new App({ name: 'billing', logger: jsonLogger({ level: 'warn', fields: { region: 'eu' } }) });
 * ```
 *
 * @category Time and logs
 */
export function jsonLogger(
  options: { level?: LogLevel; fields?: LogFields; write?: (line: string) => void } = {},
): Logger {
  const level = options.level ?? parseLogLevel(process.env.SLUICE_LOG_LEVEL, 'info');
  const write = options.write ?? ((line: string) => void process.stderr.write(line + '\n'));
  return new JsonLogger(RANK[level], options.fields ?? {}, write);
}

/**
 * A logger whose methods never throw, whatever `inner` does: the app logs from places (a handler's
 * failure, a key function's) where a throw would stop a worker or crash the process.
 */
export function safeLogger(inner: Logger): Logger {
  const guard = (call: () => void): void => {
    try {
      call();
    } catch {
      // A log line is never worth a worker.
    }
  };
  return {
    debug: (message, fields) => guard(() => inner.debug(message, fields)),
    info: (message, fields) => guard(() => inner.info(message, fields)),
    warn: (message, fields) => guard(() => inner.warn(message, fields)),
    error: (message, fields) => guard(() => inner.error(message, fields)),
    child: (fields) => {
      try {
        return safeLogger(inner.child(fields));
      } catch {
        return safeLogger(inner);
      }
    },
  };
}

class JsonLogger implements Logger {
  constructor(
    private readonly min: number,
    private readonly bound: LogFields,
    private readonly write: (line: string) => void,
  ) {}

  debug(message: string, fields?: LogFields): void {
    this.log('debug', message, fields);
  }
  info(message: string, fields?: LogFields): void {
    this.log('info', message, fields);
  }
  warn(message: string, fields?: LogFields): void {
    this.log('warn', message, fields);
  }
  error(message: string, fields?: LogFields): void {
    this.log('error', message, fields);
  }

  child(fields: LogFields): Logger {
    return new JsonLogger(this.min, { ...this.bound, ...plain(fields) }, this.write);
  }

  private log(level: LogLevel, message: string, fields: LogFields | undefined): void {
    if (RANK[level] < this.min) return;
    let text: string;
    try {
      text = JSON.stringify(
        loggable({ time: new Date().toISOString(), level, msg: String(message), ...this.bound, ...plain(fields) }, []),
      );
    } catch (error) {
      text = JSON.stringify({
        time: new Date().toISOString(),
        level,
        msg: String(message),
        logError: `fields could not be written: ${describe(error)}`,
      });
    }
    try {
      this.write(text);
    } catch {
      // Nowhere left to say it.
    }
  }
}

/** Fields as an object to spread; anything else (a caller's mistake) under `fields`. */
function plain(fields: unknown): Record<string, unknown> {
  if (fields === undefined || fields === null) return {};
  return typeof fields === 'object' && !Array.isArray(fields) ? (fields as Record<string, unknown>) : { fields };
}

/**
 * A value JSON.stringify writes without throwing: BigInts as strings, cycles as "[Circular]", errors (and
 * error-like throws) with their name, message, stack, cause and own fields, functions and symbols as text.
 * `path` holds the objects above this one, so a value seen twice side by side is written twice.
 */
function loggable(value: unknown, path: object[]): unknown {
  switch (typeof value) {
    case 'bigint':
      return `${value}n`;
    case 'function':
      return `[function ${value.name || 'anonymous'}]`;
    case 'symbol':
      return value.toString();
    case 'object':
      break;
    default:
      return value;
  }
  if (value === null) return null;
  if (path.includes(value) || path.length > 20) return path.includes(value) ? '[Circular]' : '[Too deep]';
  path.push(value);
  try {
    if (value instanceof Error) {
      const out: Record<string, unknown> = { name: value.name, message: value.message, stack: value.stack };
      for (const key of Object.keys(value)) out[key] = loggable(read(value, key), path);
      if (value.cause !== undefined) out.cause = loggable(value.cause, path);
      return out;
    }
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return loggable(callToJson(value), path);
    if (Array.isArray(value)) return value.map((v) => loggable(v, path));
    if (value instanceof Map) return loggable(Object.fromEntries(value), path);
    if (value instanceof Set) return loggable([...value], path);
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) out[key] = loggable(read(value, key), path);
    return out;
  } finally {
    path.pop();
  }
}

function read(object: object, key: string): unknown {
  try {
    return (object as Record<string, unknown>)[key];
  } catch (error) {
    return `[unreadable: ${describe(error)}]`;
  }
}

function callToJson(value: object): unknown {
  try {
    return (value as { toJSON(): unknown }).toJSON();
  } catch (error) {
    return `[toJSON threw: ${describe(error)}]`;
  }
}

function describe(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'unprintable';
  }
}
