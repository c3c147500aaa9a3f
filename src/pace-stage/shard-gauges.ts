import type { PaceHost } from './shard-placement.js';

/** What metrics read of one shard of the pace stage. */
export interface ShardGauges {
  readonly shard: number;
  /** Per paced subscriber with keys in the shard (now or before). */
  readonly subscribers: readonly {
    readonly subscriber: string;
    /** Coordinators gathering a window. */
    readonly openWindows: number;
    /** Starts waiting for their key's rate (`perMinute`). */
    readonly waitingStarts: number;
  }[];
  /** Idle keys parked in the shard's table. */
  readonly parkedKeys: number;
}

/** A shard's gauges: its open windows and starts waiting for their rate per subscriber, and its parked keys. */
export const gaugesOf = (h: PaceHost): ShardGauges => ({
  shard: h.shard,
  // In the order of PACE_TALLIES.
  // Pause coordinators count under '' (see pauseKey): no subscriber's.
  subscribers: [...h.core.tallies]
    .filter(([subscriber]) => subscriber !== '')
    .map(([subscriber, [openWindows = 0, waitingStarts = 0]]) => ({
      subscriber,
      openWindows,
      waitingStarts,
    })),
  parkedKeys: h.core.parkedCount,
});
