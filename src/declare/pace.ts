/**
 * Pace settings parsed: `parsePace` reads the `pace` option once, when the subscriber is declared, into the
 * {@link CompiledPace} that the coordinator rules read (durations in milliseconds, the gathering as a kind).
 */
import { SluiceError, show } from '../core/errors.js';
import { parseDuration } from './duration.js';
import type { PaceOptions } from './options.js';
import { fail, fields, positiveInt } from './checks.js';

/**
 * The most events one batch run carries, 1,000: `pace.batch.max` may not exceed it (`CONFIG_INVALID`), and
 * is it by default.
 *
 * @category Pace
 */
export const MAX_BATCH = 1_000;

/** How long an event ID is remembered after it arrived, unless `pace.dedup` says. */
export const DEFAULT_DEDUP_MS = 10 * 60_000;
/** How long a batch waits after its first event, unless `pace.batch.wait` says. */
export const DEFAULT_BATCH_WAIT_MS = 10_000;
/** The period of `perMinute`. */
export const MINUTE_MS = 60_000;

const PACE_PARTS = ['debounce', 'batch', 'perMinute', 'drop', 'order', 'turns', 'dedup'];

/**
 * A key's run starts held to at most `max` in any `perMs` (sliding): `perMinute` (`drop: false`, the rest
 * wait) or `drop` (`drop: true`, the rest are dropped).
 *
 * @category Pace
 */
export interface CompiledRate {
  /** Runs a key may start in any `perMs`. */
  readonly max: number;
  /** The span the runs are counted over, in milliseconds. */
  readonly perMs: number;
  /** True for `drop` (starts over the rate are dropped), false for `perMinute` (they wait). */
  readonly drop: boolean;
}

/**
 * `pace.order`: evaluated once per start, when it is appended; the number is journaled with the event.
 *
 * @category Pace
 */
export type OrderFn = (start: { event: unknown; key: string }) => number;

/**
 * What every kind of pace has besides its gathering.
 *
 * @category Pace
 */
export interface CompiledPaceCommon {
  /** How long an event ID (or a delivery's offset) is remembered, in milliseconds. */
  readonly dedupMs: number;
  /** `perMinute` or `drop`; absent for neither. */
  readonly rate?: CompiledRate;
  /** `pace.order`, kept by reference. */
  readonly order?: OrderFn;
  /** `turns: 'key'`: among waiting runs of equal order, keys take turns. */
  readonly turns?: true;
}

/**
 * A subscriber's {@link PaceOptions}, parsed: how starts are gathered into runs — `debounce` (the latest
 * start), `batch` (every start) or `each` (no gathering: every start is a run of its own) — then held to
 * the rate, ordered by `order` and `turns`. Durations are milliseconds. Frozen.
 *
 * @category Pace
 */
export type CompiledPace = CompiledDebounce | CompiledBatch | CompiledEach;

/**
 * `pace.debounce`: a key's starts collapse into one run, with the latest start's event.
 *
 * @category Pace
 */
export interface CompiledDebounce extends CompiledPaceCommon {
  /** The gathering. */
  readonly kind: 'debounce';
  /** How long after a key's latest start its run starts, in milliseconds. */
  readonly windowMs: number;
  /** The longest a window stays open after its first start, in milliseconds; `undefined` for no limit. */
  readonly maxWaitMs: number | undefined;
}

/**
 * `pace.batch`: a key's events gather into one run, every event in arrival order.
 *
 * @category Pace
 */
export interface CompiledBatch extends CompiledPaceCommon {
  /** The gathering. */
  readonly kind: 'batch';
  /** The most events a run carries. */
  readonly max: number;
  /** How long a batch gathers after its first event, in milliseconds. */
  readonly waitMs: number;
}

/**
 * Neither `debounce` nor `batch`: every start is a run of its own.
 *
 * @category Pace
 */
export interface CompiledEach extends CompiledPaceCommon {
  /** The gathering: none. */
  readonly kind: 'each';
}

/**
 * Parses a subscriber's `pace` option for subscriber `who`: each part, then the parts together. Throws
 * `SluiceError` `CONFIG_INVALID`, `PACE_UNKNOWN_PART` or `PACE_BAD_DURATION`, naming `who`, the field and
 * the value.
 */
export function parsePace(raw: unknown, who: string): CompiledPace {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    fail('CONFIG_INVALID', who, 'pace', raw, 'an object');
  for (const [part, value] of Object.entries(raw)) {
    if (!PACE_PARTS.includes(part))
      fail('PACE_UNKNOWN_PART', who, `pace.${part}`, value, `a pace part (${PACE_PARTS.join(', ')})`);
  }
  const pace = raw as PaceOptions;
  const debounce = pace.debounce === undefined ? undefined : parseDebounce(pace.debounce, who);
  const batch = pace.batch === undefined ? undefined : parseBatch(pace.batch, who);
  if (pace.perMinute !== undefined) positiveInt('CONFIG_INVALID', who, 'pace.perMinute', pace.perMinute);
  const drop = pace.drop === undefined ? undefined : parseDrop(pace.drop, who);
  if (pace.order !== undefined && typeof pace.order !== 'function')
    fail('CONFIG_INVALID', who, 'pace.order', pace.order, 'a function');
  if (pace.turns !== undefined && pace.turns !== 'key') fail('CONFIG_INVALID', who, 'pace.turns', pace.turns, "'key'");
  const dedupMs = pace.dedup === undefined ? DEFAULT_DEDUP_MS : parseDuration(pace.dedup, `${who}: pace.dedup`);

  if (debounce !== undefined && batch !== undefined) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: pace.debounce and pace.batch exclude each other (a debounced run gets the latest event, a batch every event); choose one`,
    );
  }
  if (pace.perMinute !== undefined && drop !== undefined) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: pace.perMinute and pace.drop exclude each other (starts over the rate wait under perMinute, and are dropped under drop); choose one, got perMinute ${show(pace.perMinute)} and drop ${show(pace.drop)}`,
    );
  }
  const rate: CompiledRate | undefined =
    drop ?? (pace.perMinute !== undefined ? { max: pace.perMinute, perMs: MINUTE_MS, drop: false } : undefined);
  const common: CompiledPaceCommon = {
    dedupMs,
    ...(rate !== undefined ? { rate: Object.freeze(rate) } : {}),
    ...(pace.order !== undefined ? { order: pace.order } : {}),
    ...(pace.turns === 'key' ? { turns: true as const } : {}),
  };
  if (debounce !== undefined) return Object.freeze({ ...common, kind: 'debounce', ...debounce });
  if (batch !== undefined) return Object.freeze({ ...common, kind: 'batch', ...batch });
  return Object.freeze({ ...common, kind: 'each' });
}

/** `pace.debounce`: a duration (the window), or `{ window, maxWait? }` with `maxWait` at least the window. */
function parseDebounce(raw: unknown, who: string): { windowMs: number; maxWaitMs: number | undefined } {
  if (raw === null || typeof raw !== 'object')
    return { windowMs: parseDuration(raw, `${who}: pace.debounce`), maxWaitMs: undefined };
  fields(who, 'pace.debounce', raw, '{ window, maxWait? } or a duration');
  const { window, maxWait } = raw as { window?: unknown; maxWait?: unknown };
  const windowMs = parseDuration(window, `${who}: pace.debounce.window`);
  const maxWaitMs = maxWait === undefined ? undefined : parseDuration(maxWait, `${who}: pace.debounce.maxWait`);
  // A maxWait left out is no limit: no window is longer.
  if ((maxWaitMs ?? Number.POSITIVE_INFINITY) < windowMs)
    fail('CONFIG_INVALID', who, 'pace.debounce.maxWait', maxWait, `at least the window (${windowMs} ms)`);
  return { windowMs, maxWaitMs };
}

/** `pace.batch`: `{ max?, wait? }`, `max` a positive integer up to {@link MAX_BATCH}. */
function parseBatch(raw: unknown, who: string): { max: number; waitMs: number } {
  fields(who, 'pace.batch', raw, '{ max?, wait? }');
  const { max, wait } = raw as { max?: unknown; wait?: unknown };
  if (max !== undefined) {
    positiveInt('CONFIG_INVALID', who, 'pace.batch.max', max);
    if ((max as number) > MAX_BATCH)
      fail('CONFIG_INVALID', who, 'pace.batch.max', max, `at most MAX_BATCH (${MAX_BATCH})`);
  }
  return {
    max: (max as number | undefined) ?? MAX_BATCH,
    waitMs: wait === undefined ? DEFAULT_BATCH_WAIT_MS : parseDuration(wait, `${who}: pace.batch.wait`),
  };
}

/** `pace.drop`: `{ max, per }`, `per` a duration above 0. */
function parseDrop(raw: unknown, who: string): CompiledRate {
  fields(who, 'pace.drop', raw, '{ max, per }');
  const { max, per } = raw as { max?: unknown; per?: unknown };
  positiveInt('CONFIG_INVALID', who, 'pace.drop.max', max);
  const perMs = parseDuration(per, `${who}: pace.drop.per`);
  if (perMs === 0) fail('CONFIG_INVALID', who, 'pace.drop.per', per, 'longer than 0 ms');
  return { max: max as number, perMs, drop: true };
}
