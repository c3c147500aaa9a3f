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
  'TOPIC_MISSING',
] as const;

/** One of {@link ERROR_CODES}. */
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
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  try {
    const text = JSON.stringify(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** The message of anything thrown, for logs and dead-letter headers. */
export function reasonOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return typeof error === 'string' ? error : show(error);
}
