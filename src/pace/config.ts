/**
 * Pace settings resolved to milliseconds: what the coordinator rules read. Made once at mount by
 * `compilePace`, which throws on settings that do not go together.
 */
import { SluiceError, show } from '../core/errors.js';
import { parseDuration } from '../declare/duration.js';
import type { PaceOptions } from '../declare/options.js';

/**
 * The most events one batch run carries, 1,000: `pace.batch.max` may not exceed it (`CONFIG_INVALID`), and
 * is it by default.
 *
 * @category Pace
 */
export const MAX_BATCH = 1_000;

/**
 * The longest key a paced subscriber takes, 65,535 bytes as UTF-8: `app.send` refuses a longer one with
 * `SEND_INVALID`; a broker delivery with one is dead-lettered (reason `DECODE_FAILED: the delivery cannot
 * be journaled for pace: …`) and its offset committed.
 *
 * @category Pace
 */
export const MAX_KEY_BYTES = 65_535;

/** How long an event ID is remembered after it arrived, unless `pace.dedup` says. */
export const DEFAULT_DEDUP_MS = 10 * 60_000;
/** How long a batch waits after its first event, unless `pace.batch.wait` says. */
export const DEFAULT_BATCH_WAIT_MS = 10_000;
/** The period of `perMinute`. */
export const MINUTE_MS = 60_000;

/**
 * A key's run starts held to at most `max` in any `perMs` (sliding): `perMinute` (`drop: false`, the rest
 * wait) or `drop` (`drop: true`, the rest are dropped).
 */
export interface CompiledRate {
  readonly max: number;
  readonly perMs: number;
  readonly drop: boolean;
}

/** `pace.order`: evaluated once per start, when it is appended; the number is journaled with the event. */
export type OrderFn = (start: { event: unknown; key: string }) => number;

/** What every kind of pace has besides its gathering. */
interface Common {
  readonly dedupMs: number;
  readonly rate?: CompiledRate;
  readonly order?: OrderFn;
  /** `turns: 'key'`: among waiting runs of equal order, keys take turns. */
  readonly turns?: true;
}

/**
 * How starts are gathered into runs — `debounce` (the latest start), `batch` (every start) or `each` (no
 * gathering: every start is a run of its own) — then held to the rate, ordered by `order` and `turns`.
 */
export type CompiledPace =
  | (Common & { readonly kind: 'debounce'; readonly windowMs: number; readonly maxWaitMs: number | undefined })
  | (Common & { readonly kind: 'batch'; readonly max: number; readonly waitMs: number })
  | (Common & { readonly kind: 'each' });

/** Resolves validated pace options (declare/validate.ts has checked each part) for subscriber `who`. */
export function compilePace(pace: PaceOptions, who: string): CompiledPace {
  const dedupMs = pace.dedup === undefined ? DEFAULT_DEDUP_MS : parseDuration(pace.dedup, `${who}: pace.dedup`);
  if (pace.debounce !== undefined && pace.batch !== undefined) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: pace.debounce and pace.batch exclude each other (a debounced run gets the latest event, a batch every event); choose one`,
    );
  }
  if (pace.perMinute !== undefined && pace.drop !== undefined) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: pace.perMinute and pace.drop exclude each other (starts over the rate wait under perMinute, and are dropped under drop); choose one, got perMinute ${show(pace.perMinute)} and drop ${show(pace.drop)}`,
    );
  }
  const common: Common = {
    dedupMs,
    ...(pace.perMinute !== undefined ? { rate: { max: pace.perMinute, perMs: MINUTE_MS, drop: false } } : {}),
    ...(pace.drop !== undefined
      ? { rate: { max: pace.drop.max, perMs: parseDuration(pace.drop.per, `${who}: pace.drop.per`), drop: true } }
      : {}),
    ...(pace.order !== undefined ? { order: pace.order } : {}),
    ...(pace.turns === 'key' ? { turns: true as const } : {}),
  };
  if (common.rate !== undefined && common.rate.perMs === 0) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: pace.drop.per must be longer than 0 ms, got ${show(pace.drop!.per)}`,
    );
  }
  if (pace.debounce !== undefined) {
    const d = pace.debounce;
    const spec = typeof d === 'object' && d !== null ? d : { window: d };
    const windowMs = parseDuration(spec.window, `${who}: pace.debounce.window`);
    const maxWaitMs =
      spec.maxWait === undefined ? undefined : parseDuration(spec.maxWait, `${who}: pace.debounce.maxWait`);
    if (maxWaitMs !== undefined && maxWaitMs < windowMs) {
      throw new SluiceError(
        'CONFIG_INVALID',
        `${who}: pace.debounce.maxWait must be at least the window (${windowMs} ms), got ${show(spec.maxWait)}`,
      );
    }
    return Object.freeze({ ...common, kind: 'debounce', windowMs, maxWaitMs });
  }
  if (pace.batch !== undefined) {
    const max = pace.batch.max ?? MAX_BATCH;
    if (max > MAX_BATCH)
      throw new SluiceError(
        'CONFIG_INVALID',
        `${who}: pace.batch.max must be at most MAX_BATCH (${MAX_BATCH}), got ${show(max)}`,
      );
    const waitMs =
      pace.batch.wait === undefined ? DEFAULT_BATCH_WAIT_MS : parseDuration(pace.batch.wait, `${who}: pace.batch.wait`);
    return Object.freeze({ ...common, kind: 'batch', max, waitMs });
  }
  return Object.freeze({ ...common, kind: 'each' });
}
