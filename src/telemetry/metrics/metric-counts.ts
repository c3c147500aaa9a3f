import type { StoreObserver } from '../../core/ports.js';
import { Buckets } from './metric-histogram.js';
import { HANDLED_OUTCOMES, type HandledOutcome, type PipelineObserver } from '../../pipeline/delivery-events.js';

/** Bounds of the handler duration histogram, in seconds. */
export const HANDLER_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Bounds of the store's fsync (group commit) duration histogram, in seconds. */
export const FSYNC_SECONDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
/** Bounds of the records-per-fsync histogram. */
export const RECORDS_PER_FSYNC = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096];
/** Bounds of the snapshot duration histogram, in seconds. */
export const SNAPSHOT_SECONDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60];

const OUTCOME_INDEX = Object.fromEntries(HANDLED_OUTCOMES.map((o, i) => [o, i])) as Record<HandledOutcome, number>;

/**
 * One subscriber's counts, in plain numbers updated on the delivery path, read by the metrics at scrape
 * time. Kept by the app across its starts, so that counters never go back.
 */
export class SubscriberCounts implements PipelineObserver {
  /** Per {@link HANDLED_OUTCOMES}, in its order. */
  readonly outcomes = new Float64Array(HANDLED_OUTCOMES.length);
  readonly duration = new Buckets(HANDLER_SECONDS);

  constructor(
    readonly labels: { readonly subscriber: string; readonly topic: string },
    readonly now: () => number,
  ) {}

  handled(outcome: HandledOutcome, seconds?: number): void {
    this.outcomes[OUTCOME_INDEX[outcome]]!++;
    if (seconds !== undefined) this.duration.observe(seconds);
  }
}

/** One shard's store histograms. */
export interface ShardCounts {
  readonly fsync: Buckets;
  readonly records: Buckets;
  readonly snapshot: Buckets;
}

/** The store's counts per shard, as its observer hears them (see `Store.observe`). */
export class StoreCounts implements StoreObserver {
  readonly shards = new Map<number, ShardCounts>();

  flushed(shard: number, records: number, seconds: number): void {
    const counts = this.of(shard);
    counts.fsync.observe(seconds);
    counts.records.observe(records);
  }

  snapshotWritten(shard: number, seconds: number): void {
    this.of(shard).snapshot.observe(seconds);
  }

  private of(shard: number): ShardCounts {
    let counts = this.shards.get(shard);
    if (counts === undefined) {
      counts = {
        fsync: new Buckets(FSYNC_SECONDS),
        records: new Buckets(RECORDS_PER_FSYNC),
        snapshot: new Buckets(SNAPSHOT_SECONDS),
      };
      this.shards.set(shard, counts);
    }
    return counts;
  }
}
