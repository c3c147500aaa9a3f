/**
 * Errors as a closed union of codes. Every error Sluice throws on purpose is a {@link SluiceError}
 * whose `code` is one of {@link ERROR_CODES}; the message names the subscriber, the field and the value.
 */
export const ERROR_CODES = [
  'WORKERS_INVALID',
  'CONFIG_INVALID',
  'PACE_UNKNOWN_PART',
  'PACE_BAD_DURATION',
  'UNKNOWN_SUBSCRIBER',
  'DECODE_FAILED',
  'STORE_CORRUPT',
  'HANDLER_TIMEOUT',
  'APP_STATE',
  'SEND_INVALID',
  'PUBLISH_REFUSED',
  'TOPIC_MISSING',
] as const;

/**
 * One of {@link ERROR_CODES}. `PUBLISH_REFUSED`: a broker refused a message for good (too large, invalid), so
 * publishing it again cannot succeed; any other publish error may pass.
 */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The error Sluice throws: a stable `code`, a precise message and, where there is one, the `cause`. */
export class SluiceError extends Error {
  override readonly name = 'SluiceError';
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Renders a user-supplied value for an error message: short, unambiguous, never throws. */
export function show(value: unknown): string {
  try {
    return showUnsafe(value);
  } catch {
    return 'a value that cannot be read';
  }
}

function showUnsafe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return `function ${String(value.name) || '(anonymous)'}`;
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  try {
    const text: string | undefined = JSON.stringify(value);
    if (text === undefined) return Object.prototype.toString.call(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** The message of anything thrown, for logs and dead-letter headers. Never throws, whatever was thrown. */
export function reasonOf(error: unknown): string {
  try {
    if (error instanceof Error) return String(error.message || error.name);
    return typeof error === 'string' ? error : show(error);
  } catch {
    return 'a value that cannot be read';
  }
}
