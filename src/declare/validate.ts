import { SluiceError, show, type ErrorCode } from '../core/errors.js';
import { parseDuration } from './duration.js';
import {
  OPTION_NAMES,
  SHARED_OPTION_NAMES,
  type PaceOptions,
  type SharedOptions,
  type SubscriberOptions,
} from './options.js';

/**
 * The most workers (or lanes) a subscriber may have, 10,000: each is a long-lived slot, made at start. More
 * throws {@link SluiceError} `WORKERS_INVALID`.
 *
 * @category Subscribers
 */
export const MAX_WORKERS = 10_000;

const PACE_PARTS = new Set(['debounce', 'batch', 'perMinute', 'drop', 'order', 'turns', 'dedup']);
const SHARED_NAMES: ReadonlySet<string> = new Set(SHARED_OPTION_NAMES);

/** The fields of each nested setting, by path: any other key is a misspelling, refused like an unknown option. */
const NESTED_FIELDS = {
  batch: ['max'],
  retry: ['attempts', 'backoff'],
  'retry.backoff': ['initialMs', 'maxMs'],
  'pace.debounce': ['window', 'maxWait'],
  'pace.batch': ['max', 'wait'],
  'pace.drop': ['max', 'per'],
} as const satisfies Record<string, readonly string[]>;

/**
 * Checks raw subscriber (or router) settings and returns a deeply frozen copy: nested settings (`retry`,
 * its `backoff`, `batch`, `pace` and its parts) are copied, functions and decoders kept by reference, so
 * changing the caller's object afterwards changes nothing. `who` names the owner in errors, e.g.
 * `subscriber "Billing.bill"`. Throws `SluiceError` naming the field and the value.
 */
export function validateOptions<T extends SubscriberOptions>(raw: T, who: string): Readonly<T> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    fail('CONFIG_INVALID', who, 'options', raw, 'an object');
  for (const field of Object.keys(raw)) {
    if (!OPTION_NAMES.has(field))
      fail(
        'CONFIG_INVALID',
        who,
        field,
        (raw as Record<string, unknown>)[field],
        `a known setting (${[...OPTION_NAMES].join(', ')})`,
      );
  }
  const o = raw as SubscriberOptions;
  if (o.name !== undefined) checkName(who, o.name);
  if (o.workers !== undefined) {
    positiveInt('WORKERS_INVALID', who, 'workers', o.workers);
    if (o.workers > MAX_WORKERS) fail('WORKERS_INVALID', who, 'workers', o.workers, `at most ${MAX_WORKERS}`);
  }
  if (o.byKey !== undefined && typeof o.byKey !== 'boolean')
    fail('CONFIG_INVALID', who, 'byKey', o.byKey, 'true or false');
  if (o.key !== undefined && typeof o.key !== 'function')
    fail('CONFIG_INVALID', who, 'key', o.key, 'a function (message) => string | undefined');
  if (o.group !== undefined && !(typeof o.group === 'string' && o.group !== '' && !o.group.includes('\u0000')))
    fail('CONFIG_INVALID', who, 'group', o.group, 'a non-empty string without NUL');
  if (
    o.decode !== undefined &&
    typeof o.decode !== 'function' &&
    typeof (o.decode as { parse?: unknown })?.parse !== 'function'
  ) {
    fail('CONFIG_INVALID', who, 'decode', o.decode, 'a function or an object with parse()');
  }
  if (o.batch !== undefined) {
    fields(who, 'batch', o.batch, '{ max }');
    positiveInt('CONFIG_INVALID', who, 'batch.max', o.batch.max);
  }
  if (o.retry !== undefined) {
    fields(who, 'retry', o.retry, '{ attempts?, backoff? }');
    if (o.retry.attempts !== undefined) positiveInt('CONFIG_INVALID', who, 'retry.attempts', o.retry.attempts);
    const b = o.retry.backoff;
    if (b !== undefined) {
      fields(who, 'retry.backoff', b, '{ initialMs?, maxMs? }');
      if (b.initialMs !== undefined) nonNegative(who, 'retry.backoff.initialMs', b.initialMs);
      if (b.maxMs !== undefined) nonNegative(who, 'retry.backoff.maxMs', b.maxMs);
      if (b.initialMs !== undefined && b.maxMs !== undefined && b.maxMs < b.initialMs) {
        fail('CONFIG_INVALID', who, 'retry.backoff.maxMs', b.maxMs, `at least initialMs (${b.initialMs})`);
      }
    }
  }
  if (
    o.deadLetter !== undefined &&
    o.deadLetter !== false &&
    !(typeof o.deadLetter === 'string' && o.deadLetter !== '')
  ) {
    fail('CONFIG_INVALID', who, 'deadLetter', o.deadLetter, 'a topic name or false');
  }
  if (o.timeoutMs !== undefined && !(Number.isFinite(o.timeoutMs) && o.timeoutMs > 0)) {
    fail('CONFIG_INVALID', who, 'timeoutMs', o.timeoutMs, 'a positive number of milliseconds');
  }
  if (o.pace !== undefined) validatePace(o.pace, who);
  if (o.byKey === true && o.batch !== undefined) {
    fail(
      'CONFIG_INVALID',
      who,
      'batch',
      o.batch,
      'left out when byKey is set (a batch spans keys; use pace.batch for per-key batches)',
    );
  }
  return frozenCopy(raw);
}

/**
 * Checks defaults given to everything included (the app's `defaults`): only the settings a router may give
 * (`SHARED_OPTION_NAMES`), each checked as a subscriber's. Returns a deeply frozen copy.
 */
export function validateDefaults(raw: unknown, who: string): Readonly<SharedOptions> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new SluiceError('CONFIG_INVALID', `${who} must be an object, got ${show(raw)}`);
  for (const field of Object.keys(raw)) {
    if (!SHARED_NAMES.has(field))
      fail(
        'CONFIG_INVALID',
        who,
        field,
        (raw as Record<string, unknown>)[field],
        `a setting given as a default (${SHARED_OPTION_NAMES.join(', ')})`,
      );
  }
  return validateOptions(raw as SharedOptions, who);
}

function validatePace(pace: PaceOptions, who: string): void {
  if (pace === null || typeof pace !== 'object' || Array.isArray(pace))
    fail('CONFIG_INVALID', who, 'pace', pace, 'an object');
  for (const part of Object.keys(pace)) {
    if (!PACE_PARTS.has(part))
      fail(
        'PACE_UNKNOWN_PART',
        who,
        `pace.${part}`,
        (pace as Record<string, unknown>)[part],
        `a pace part (${[...PACE_PARTS].join(', ')})`,
      );
  }
  const where = (f: string): string => `${who}: pace.${f}`;
  const d = pace.debounce;
  if (d !== undefined) {
    if (typeof d === 'object' && d !== null) {
      fields(who, 'pace.debounce', d, '{ window, maxWait? } or a duration');
      parseDuration(d.window, where('debounce.window'));
      if (d.maxWait !== undefined) parseDuration(d.maxWait, where('debounce.maxWait'));
    } else parseDuration(d, where('debounce'));
  }
  if (pace.batch !== undefined) {
    fields(who, 'pace.batch', pace.batch, '{ max?, wait? }');
    if (pace.batch.max !== undefined) positiveInt('CONFIG_INVALID', who, 'pace.batch.max', pace.batch.max);
    if (pace.batch.wait !== undefined) parseDuration(pace.batch.wait, where('batch.wait'));
  }
  if (pace.perMinute !== undefined) positiveInt('CONFIG_INVALID', who, 'pace.perMinute', pace.perMinute);
  if (pace.drop !== undefined) {
    fields(who, 'pace.drop', pace.drop, '{ max, per }');
    positiveInt('CONFIG_INVALID', who, 'pace.drop.max', pace.drop.max);
    parseDuration(pace.drop.per, where('drop.per'));
  }
  if (pace.order !== undefined && typeof pace.order !== 'function')
    fail('CONFIG_INVALID', who, 'pace.order', pace.order, 'a function');
  if (pace.turns !== undefined && pace.turns !== 'key') fail('CONFIG_INVALID', who, 'pace.turns', pace.turns, "'key'");
  if (pace.dedup !== undefined) parseDuration(pace.dedup, where('dedup'));
}

/** A nested setting is an object (not null, not an array) with no key but its known fields. */
function fields(who: string, path: keyof typeof NESTED_FIELDS, value: unknown, shape: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    fail('CONFIG_INVALID', who, path, value, `an object ${shape}`);
  const known: readonly string[] = NESTED_FIELDS[path];
  for (const k of Object.keys(value)) {
    if (!known.includes(k))
      fail(
        'CONFIG_INVALID',
        who,
        `${path}.${k}`,
        (value as Record<string, unknown>)[k],
        `a known field of ${path} (${known.join(', ')})`,
      );
  }
}

/** A copy of checked settings, frozen at every level; functions and decoders are kept by reference. */
function frozenCopy<T extends SubscriberOptions>(o: T): Readonly<T> {
  const copy: SubscriberOptions = { ...o };
  if (o.batch !== undefined) copy.batch = Object.freeze({ ...o.batch });
  if (o.retry !== undefined) {
    const backoff = o.retry.backoff;
    copy.retry = Object.freeze({
      ...o.retry,
      ...(backoff !== undefined ? { backoff: Object.freeze({ ...backoff }) } : {}),
    });
  }
  if (o.pace !== undefined) {
    const p = o.pace;
    const pace: PaceOptions = { ...p };
    if (typeof p.debounce === 'object') pace.debounce = Object.freeze({ ...p.debounce }); // checked: not null
    if (p.batch !== undefined) pace.batch = Object.freeze({ ...p.batch });
    if (p.drop !== undefined) pace.drop = Object.freeze({ ...p.drop });
    copy.pace = Object.freeze(pace);
  }
  return Object.freeze(copy) as Readonly<T>;
}

/**
 * A subscriber's name: not blank, and without NUL (pace keys a subscriber's coordinators by its name and a
 * NUL after it). Checked for a given name and for the default one alike.
 */
export function checkName(who: string, name: unknown): void {
  if (!(typeof name === 'string' && name.trim() !== '' && !name.includes('\u0000')))
    fail('CONFIG_INVALID', who, 'name', name, 'a non-empty string without NUL');
}

// Number.isInteger and Number.isFinite are false for anything but a number (they do not convert "5" as the global
// isFinite does).

function positiveInt(code: ErrorCode, who: string, field: string, value: unknown): void {
  if (!(Number.isInteger(value) && (value as number) >= 1)) fail(code, who, field, value, 'a positive integer');
}

function nonNegative(who: string, field: string, value: unknown): void {
  if (!(Number.isFinite(value) && (value as number) >= 0))
    fail('CONFIG_INVALID', who, field, value, 'a finite number >= 0');
}

/** Throws the standard settings error: `<who>: <field> must be <expected>, got <value>`. */
export function fail(code: ErrorCode, who: string, field: string, value: unknown, expected: string): never {
  throw new SluiceError(code, `${who}: ${field} must be ${expected}, got ${show(value)}`);
}
