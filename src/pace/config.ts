/**
 * Pace settings resolved to milliseconds: what the coordinator rules read. Made once at mount by
 * `compilePace`, which refuses what this version does not run with a clear error.
 */
import { SluiceError, show } from '../core/errors.js';
import { parseDuration } from '../spec/duration.js';
import type { PaceOptions } from '../spec/options.js';

/** The most events one batch run carries: `pace.batch.max` may not exceed it, and is it by default. */
export const MAX_BATCH = 1_000;

/** How long event IDs are remembered after a key's last event with an ID, unless `pace.dedup` says. */
export const DEFAULT_DEDUP_MS = 10 * 60_000;
/** How long a batch waits after its first event, unless `pace.batch.wait` says. */
export const DEFAULT_BATCH_WAIT_MS = 10_000;

export type CompiledPace =
  | { readonly kind: 'debounce'; readonly windowMs: number; readonly maxWaitMs: number | undefined; readonly dedupMs: number }
  | { readonly kind: 'batch'; readonly max: number; readonly waitMs: number; readonly dedupMs: number };

/** Resolves validated pace options (spec/validate.ts has checked each part) for subscriber `who`. */
export function compilePace(pace: PaceOptions, who: string): CompiledPace {
  const later = (['perMinute', 'drop', 'order', 'turns'] as const).filter((p) => pace[p] !== undefined);
  if (later.length > 0) {
    throw new SluiceError('CONFIG_INVALID', `${who}: pace.${later[0]} is not available in this version yet (debounce, batch and dedup are), got ${show(pace[later[0]!])}`);
  }
  const dedupMs = pace.dedup === undefined ? DEFAULT_DEDUP_MS : parseDuration(pace.dedup, `${who}: pace.dedup`);
  if (pace.debounce !== undefined && pace.batch !== undefined) {
    throw new SluiceError('CONFIG_INVALID', `${who}: pace.debounce and pace.batch exclude each other (a debounced run gets the latest event, a batch every event); choose one`);
  }
  if (pace.debounce !== undefined) {
    const d = pace.debounce;
    const spec = typeof d === 'object' && d !== null ? d : { window: d };
    const windowMs = parseDuration(spec.window, `${who}: pace.debounce.window`);
    const maxWaitMs = spec.maxWait === undefined ? undefined : parseDuration(spec.maxWait, `${who}: pace.debounce.maxWait`);
    if (maxWaitMs !== undefined && maxWaitMs < windowMs) {
      throw new SluiceError('CONFIG_INVALID', `${who}: pace.debounce.maxWait must be at least the window (${windowMs} ms), got ${show(spec.maxWait)}`);
    }
    return Object.freeze({ kind: 'debounce', windowMs, maxWaitMs, dedupMs });
  }
  if (pace.batch !== undefined) {
    const max = pace.batch.max ?? MAX_BATCH;
    if (max > MAX_BATCH) throw new SluiceError('CONFIG_INVALID', `${who}: pace.batch.max must be at most MAX_BATCH (${MAX_BATCH}), got ${show(max)}`);
    const waitMs = pace.batch.wait === undefined ? DEFAULT_BATCH_WAIT_MS : parseDuration(pace.batch.wait, `${who}: pace.batch.wait`);
    return Object.freeze({ kind: 'batch', max, waitMs, dedupMs });
  }
  throw new SluiceError('CONFIG_INVALID', `${who}: pace needs debounce or batch in this version, got ${show(Object.keys(pace))}`);
}
