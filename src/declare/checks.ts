/** The checks every settings parser shares, and the one form of their errors. */
import { SluiceError, show, type ErrorCode } from '../core/errors.js';
import type { Decoder } from './decoder.js';

/** The fields of each nested setting, by path: any other key is a misspelling, refused like an unknown option. */
const NESTED_FIELDS = {
  batch: ['max'],
  retry: ['attempts', 'backoff'],
  'retry.backoff': ['initialMs', 'maxMs'],
  'pace.debounce': ['window', 'maxWait'],
  'pace.batch': ['max', 'wait'],
  'pace.drop': ['max', 'per'],
} as const satisfies Record<string, readonly string[]>;

/** Throws the standard settings error: `<who>: <field> must be <expected>, got <value>`. */
export function fail(code: ErrorCode, who: string, field: string, value: unknown, expected: string): never {
  throw new SluiceError(code, `${who}: ${field} must be ${expected}, got ${show(value)}`);
}

/** A nested setting is an object (not null, not an array) with no key but its known fields. */
export function fields(who: string, path: keyof typeof NESTED_FIELDS, value: unknown, shape: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    fail('CONFIG_INVALID', who, path, value, `an object ${shape}`);
  const known: readonly string[] = NESTED_FIELDS[path];
  for (const [k, v] of Object.entries(value)) {
    if (!known.includes(k))
      fail('CONFIG_INVALID', who, `${path}.${k}`, v, `a known field of ${path} (${known.join(', ')})`);
  }
}

// Number.isInteger and Number.isFinite are false for anything but a number (they do not convert "5" as the global
// isFinite does).

/** A positive integer, or `code`. */
export function positiveInt(code: ErrorCode, who: string, field: string, value: unknown): void {
  if (!(Number.isInteger(value) && (value as number) >= 1)) fail(code, who, field, value, 'a positive integer');
}

/** A finite number >= 0. */
export function nonNegative(who: string, field: string, value: unknown): void {
  if (!(Number.isFinite(value) && (value as number) >= 0))
    fail('CONFIG_INVALID', who, field, value, 'a finite number >= 0');
}

/**
 * A subscriber's name: not blank, and without NUL (pace keys a subscriber's coordinators by its name and a
 * NUL after it). Checked for a given name and for the default one alike.
 */
export function checkName(who: string, name: unknown): void {
  if (!(typeof name === 'string' && name.trim() !== '' && !name.includes('\u0000')))
    fail('CONFIG_INVALID', who, 'name', name, 'a non-empty string without NUL');
}

/** A decoder: a function, an object with `parse`, or a Standard Schema (version 1). */
export function isDecoder(d: unknown): d is Decoder {
  if (typeof d === 'function' || typeof (d as { parse?: unknown } | null)?.parse === 'function') return true;
  const standard = (d as { '~standard'?: { version?: unknown; validate?: unknown } } | null)?.['~standard'];
  return standard?.version === 1 && typeof standard.validate === 'function';
}
