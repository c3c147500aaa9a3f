import { SluiceError, show, type ErrorCode } from '../core/errors.js';
import { parseDuration } from './duration.js';
import { OPTION_NAMES, type PaceOptions, type SubscriberOptions } from './options.js';

const PACE_PARTS = new Set(['debounce', 'batch', 'perMinute', 'drop', 'order', 'turns', 'dedup']);

/**
 * Checks raw subscriber (or router) settings and returns a frozen copy. `who` names the owner in errors,
 * e.g. `subscriber "Billing.bill"`. Throws `SluiceError` naming the field and the value.
 */
export function validateOptions<T extends SubscriberOptions>(raw: T, who: string): Readonly<T> {
  if (raw === null || typeof raw !== 'object') fail('CONFIG_INVALID', who, 'options', raw, 'an object');
  for (const field of Object.keys(raw)) {
    if (!OPTION_NAMES.has(field)) fail('CONFIG_INVALID', who, field, (raw as Record<string, unknown>)[field], `a known setting (${[...OPTION_NAMES].join(', ')})`);
  }
  const o = raw as SubscriberOptions;
  if (o.name !== undefined && !(typeof o.name === 'string' && o.name.trim() !== '')) fail('CONFIG_INVALID', who, 'name', o.name, 'a non-empty string');
  if (o.workers !== undefined) positiveInt('WORKERS_INVALID', who, 'workers', o.workers);
  if (o.byKey !== undefined && typeof o.byKey !== 'boolean') fail('CONFIG_INVALID', who, 'byKey', o.byKey, 'true or false');
  if (o.key !== undefined && typeof o.key !== 'function') fail('CONFIG_INVALID', who, 'key', o.key, 'a function (message) => string | undefined');
  if (o.group !== undefined && !(typeof o.group === 'string' && o.group !== '')) fail('CONFIG_INVALID', who, 'group', o.group, 'a non-empty string');
  if (o.decode !== undefined && typeof o.decode !== 'function' && typeof (o.decode as { parse?: unknown })?.parse !== 'function') {
    fail('CONFIG_INVALID', who, 'decode', o.decode, 'a function or an object with parse()');
  }
  if (o.batch !== undefined) {
    if (o.batch === null || typeof o.batch !== 'object') fail('CONFIG_INVALID', who, 'batch', o.batch, 'an object { max }');
    positiveInt('CONFIG_INVALID', who, 'batch.max', o.batch.max);
  }
  if (o.retry !== undefined) {
    if (o.retry === null || typeof o.retry !== 'object') fail('CONFIG_INVALID', who, 'retry', o.retry, 'an object { attempts, backoff }');
    if (o.retry.attempts !== undefined) positiveInt('CONFIG_INVALID', who, 'retry.attempts', o.retry.attempts);
    const b = o.retry.backoff;
    if (b !== undefined) {
      if (b.initialMs !== undefined) nonNegative(who, 'retry.backoff.initialMs', b.initialMs);
      if (b.maxMs !== undefined) nonNegative(who, 'retry.backoff.maxMs', b.maxMs);
      if (b.initialMs !== undefined && b.maxMs !== undefined && b.maxMs < b.initialMs) {
        fail('CONFIG_INVALID', who, 'retry.backoff.maxMs', b.maxMs, `at least initialMs (${b.initialMs})`);
      }
    }
  }
  if (o.deadLetter !== undefined && o.deadLetter !== false && !(typeof o.deadLetter === 'string' && o.deadLetter !== '')) {
    fail('CONFIG_INVALID', who, 'deadLetter', o.deadLetter, 'a topic name or false');
  }
  if (o.timeoutMs !== undefined && !(typeof o.timeoutMs === 'number' && o.timeoutMs > 0 && Number.isFinite(o.timeoutMs))) {
    fail('CONFIG_INVALID', who, 'timeoutMs', o.timeoutMs, 'a positive number of milliseconds');
  }
  if (o.pace !== undefined) validatePace(o.pace, who);
  if (o.byKey === true && o.batch !== undefined) {
    fail('CONFIG_INVALID', who, 'batch', o.batch, 'left out when byKey is set (a batch spans keys; use pace.batch for per-key batches)');
  }
  return Object.freeze({ ...raw });
}

function validatePace(pace: PaceOptions, who: string): void {
  if (pace === null || typeof pace !== 'object') fail('CONFIG_INVALID', who, 'pace', pace, 'an object');
  for (const part of Object.keys(pace)) {
    if (!PACE_PARTS.has(part)) fail('PACE_UNKNOWN_PART', who, `pace.${part}`, part, `one of ${[...PACE_PARTS].join(', ')}`);
  }
  const where = (f: string): string => `${who}: pace.${f}`;
  const d = pace.debounce;
  if (d !== undefined) {
    if (typeof d === 'object' && d !== null) {
      parseDuration(d.window, where('debounce.window'));
      if (d.maxWait !== undefined) parseDuration(d.maxWait, where('debounce.maxWait'));
    } else parseDuration(d, where('debounce'));
  }
  if (pace.batch !== undefined) {
    if (pace.batch.max !== undefined) positiveInt('CONFIG_INVALID', who, 'pace.batch.max', pace.batch.max);
    if (pace.batch.wait !== undefined) parseDuration(pace.batch.wait, where('batch.wait'));
  }
  if (pace.perMinute !== undefined) positiveInt('CONFIG_INVALID', who, 'pace.perMinute', pace.perMinute);
  if (pace.drop !== undefined) {
    positiveInt('CONFIG_INVALID', who, 'pace.drop.max', pace.drop.max);
    parseDuration(pace.drop.per, where('drop.per'));
  }
  if (pace.order !== undefined && typeof pace.order !== 'function') fail('CONFIG_INVALID', who, 'pace.order', pace.order, 'a function');
  if (pace.turns !== undefined && pace.turns !== 'key') fail('CONFIG_INVALID', who, 'pace.turns', pace.turns, "'key'");
  if (pace.dedup !== undefined) parseDuration(pace.dedup, where('dedup'));
}

function positiveInt(code: ErrorCode, who: string, field: string, value: unknown): void {
  if (!(typeof value === 'number' && Number.isInteger(value) && value >= 1)) fail(code, who, field, value, 'a positive integer');
}

function nonNegative(who: string, field: string, value: unknown): void {
  if (!(typeof value === 'number' && Number.isFinite(value) && value >= 0)) fail('CONFIG_INVALID', who, field, value, 'a finite number >= 0');
}

/** Throws the standard settings error: `<who>: <field> must be <expected>, got <value>`. */
export function fail(code: ErrorCode, who: string, field: string, value: unknown, expected: string): never {
  throw new SluiceError(code, `${who}: ${field} must be ${expected}, got ${show(value)}`);
}
