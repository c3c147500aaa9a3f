import type * as PromClient from 'prom-client';
import { SystemClock } from '../../core/clock.js';
import { SluiceError } from '../../core/errors.js';
import type { Clock, Logger } from '../../core/ports.js';
import type { CompiledSubscriber } from '../../declare/compile.js';
import { HistogramMetric, type HistogramSeries } from './metric-histogram.js';
import { StoreCounts, SubscriberCounts } from './metric-counts.js';
import { HANDLED_OUTCOMES } from '../../pipeline/delivery-events.js';
import { loadOptionalPeer } from '../optional-peer.js';
import type { Pacer } from '../../pace-stage/pacer.js';
import type { Subscription } from '../../pipeline/subscription.js';
import type { LagRead } from '../../pipeline/lag-reads.js';
import type { MetricsRegistry } from '../telemetry-options.js';

type Client = typeof PromClient;
type Labels = Record<string, string | number>;

/** The prom-client versions Sluice's metrics are written and tested against (package.json's `peerDependencies`). */
export const PROM_CLIENT_RANGE = '^15.1.0';

/** What the metrics read when scraped: the app's running parts. */
export interface MetricsSource {
  readonly subscriptions: () => readonly Subscription[];
  readonly pacer: () => Pacer | undefined;
  readonly log: Logger;
}

/** Loads prom-client (an optional peer dependency), or says how to install it. */
export function loadPromClient(load: () => Promise<unknown> = () => import('prom-client')): Promise<Client> {
  return loadOptionalPeer<Client>(
    { name: 'prom-client', range: PROM_CLIENT_RANGE, neededBy: 'App metrics need', export: 'Registry' },
    load,
  );
}

/**
 * The app's Prometheus metrics: counts kept in plain numbers on the delivery path (see {@link SubscriberCounts}),
 * gauges read from the app's state at scrape time (prom-client's `collect`), registered once per app.
 */
export class AppMetrics {
  /** Per subscriber name: kept across the app's starts. */
  private readonly counts = new Map<string, SubscriberCounts>();
  readonly store = new StoreCounts();
  /** The clock attempts are timed on: the monotonic one under the system clock, else the app's (tests). */
  private readonly now: () => number;

  constructor(
    private readonly client: Client,
    readonly registry: MetricsRegistry,
    private readonly source: MetricsSource,
    clock: Clock,
  ) {
    this.now = clock instanceof SystemClock ? performance.now.bind(performance) : () => clock.now();
    try {
      this.register();
    } catch (error) {
      throw new SluiceError(
        'CONFIG_INVALID',
        `metrics: the registry has Sluice's metrics already (one app per registry): ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** The observer of one subscriber's seams. */
  observerOf(sub: CompiledSubscriber): SubscriberCounts {
    let counts = this.counts.get(sub.name);
    if (counts === undefined) {
      counts = new SubscriberCounts({ subscriber: sub.name, topic: sub.topic }, this.now);
      this.counts.set(sub.name, counts);
    }
    return counts;
  }

  private register(): void {
    this.registerCounts();
    this.registerWork();
    this.registerPartitions();
    this.registerPace();
    this.registerStore();
  }

  /** Counters and the handler histogram, from the subscribers' counts. */
  private registerCounts(): void {
    const counts = (): SubscriberCounts[] => [...this.counts.values()];
    this.counter(
      'sluice_handled_total',
      'Attempts at handlers (and deliveries that reached none), by outcome',
      ['outcome'],
      (add) => {
        for (const c of counts())
          HANDLED_OUTCOMES.forEach((outcome, i) => add({ ...c.labels, outcome }, c.outcomes[i]!));
      },
    );
    this.histogram('sluice_handler_duration_seconds', 'How long attempts at handlers ran', () =>
      counts().map((c) => ({ labels: c.labels, buckets: c.duration })),
    );
    this.counter('sluice_dead_letters_total', 'Dead letters, by what became of them', ['result'], (add) => {
      for (const s of this.source.subscriptions())
        for (const [result, n] of Object.entries(s.deadLetters)) add({ ...labelsOf(s), result }, n);
    });
    this.counter(
      'sluice_rebalances_total',
      'Assignments the consumer was given (group rebalances, the first join included)',
      [],
      (add) => {
        for (const s of this.source.subscriptions()) add(labelsOf(s), s.probe.assignments() ?? 0);
      },
    );
  }

  /** Gauges of the work in each subscription. */
  private registerWork(): void {
    const each = (read: (s: Subscription) => number) => (set: (labels: Labels, v: number) => void) => {
      for (const s of this.source.subscriptions()) set(labelsOf(s), read(s));
    };
    this.gauge(
      'sluice_in_flight',
      'Attempts running on a worker',
      [],
      each((s) => s.probe.counts().running),
    );
    this.gauge(
      'sluice_waiting_for_worker',
      'Work taken and waiting for a worker',
      [],
      each((s) => s.probe.counts().waitingForWorker),
    );
    this.gauge(
      'sluice_waiting_for_retry',
      "Work waiting for a retry's backoff",
      [],
      each((s) => s.probe.counts().waitingForRetry),
    );
    this.gauge(
      'sluice_assigned_partitions',
      'Partitions the consumer owns',
      [],
      each((s) => s.probe.assigned().length),
    );
  }

  /** Per-partition gauges: what waits to be committed, and the consumer's lag. */
  private registerPartitions(): void {
    this.gauge(
      'sluice_uncommitted',
      'Deliveries at or above the watermark, not yet committable',
      ['partition'],
      (set) => {
        for (const s of this.source.subscriptions())
          for (const { partition, count } of s.probe.uncommitted()) set({ ...labelsOf(s), partition }, count);
      },
    );
    // One read of the lags per scrape, shared by both gauges (prom-client collects them one after the other).
    let reading: Promise<LagRead[]> | undefined;
    const lagsOf = (subs: readonly Subscription[]): Promise<LagRead[]> => {
      reading ??= Promise.all(subs.map((s) => s.probe.partitionLags())).finally(() => (reading = undefined));
      return reading;
    };
    this.gauge(
      'sluice_consumer_lag',
      "Messages past the group's committed offset (the last count the broker told: see sluice_consumer_lag_stale)",
      ['partition'],
      async (set) => {
        const subs = this.source.subscriptions();
        const reads = await lagsOf(subs);
        subs.forEach((s, i) => {
          for (const { partition, lag } of reads[i]!.lags) set({ ...labelsOf(s), partition }, lag);
        });
      },
    );
    this.gauge(
      'sluice_consumer_lag_stale',
      'Whether the broker did not tell the lag within a second (an outage): sluice_consumer_lag is then the last count',
      [],
      async (set) => {
        const subs = this.source.subscriptions();
        const reads = await lagsOf(subs);
        subs.forEach((s, i) => set(labelsOf(s), reads[i]!.stale ? 1 : 0));
      },
    );
  }

  /** The pace stage's gauges, per shard hosted here. */
  private registerPace(): void {
    const shards = () => this.source.pacer()?.shardGauges() ?? [];
    const labels = ['subscriber', 'shard'];
    this.gauge('sluice_pace_open_windows', 'Pace coordinators gathering a window', labels, (set) => {
      for (const g of shards())
        for (const s of g.subscribers) set({ subscriber: s.subscriber, shard: g.shard }, s.openWindows);
    });
    this.gauge('sluice_pace_waiting_starts', "Pace starts waiting for their key's rate", labels, (set) => {
      for (const g of shards())
        for (const s of g.subscribers) set({ subscriber: s.subscriber, shard: g.shard }, s.waitingStarts);
    });
    this.gauge('sluice_pace_parked_keys', 'Idle pace keys parked in the shard table', ['shard'], (set) => {
      for (const g of shards()) set({ shard: g.shard }, g.parkedKeys);
    });
  }

  /** The store's histograms, per shard. */
  private registerStore(): void {
    const per = (pick: 'fsync' | 'records' | 'snapshot') => (): HistogramSeries[] =>
      [...this.store.shards].map(([shard, c]) => ({ labels: { shard }, buckets: c[pick] }));
    this.histogram(
      'sluice_store_fsync_seconds',
      "How long the store's group commits took (write and fdatasync; a Kafka transaction)",
      per('fsync'),
    );
    this.histogram(
      'sluice_store_records_per_fsync',
      "Records made durable by each of the store's group commits",
      per('records'),
    );
    this.histogram('sluice_store_snapshot_seconds', 'How long writing a shard snapshot took', per('snapshot'));
  }

  private counter(
    name: string,
    help: string,
    extra: string[],
    fill: (add: (l: Labels, v: number) => void) => void,
  ): void {
    new this.client.Counter({
      name,
      help,
      labelNames: ['subscriber', 'topic', ...extra],
      registers: [this.registry as unknown as PromClient.Registry],
      collect() {
        this.reset();
        fill((labels, v) => this.inc(labels, v));
      },
    });
  }

  private gauge(
    name: string,
    help: string,
    extra: string[],
    fill: (set: (l: Labels, v: number) => void) => void | Promise<void>,
  ): void {
    const base = extra.includes('shard') ? [] : ['subscriber', 'topic'];
    new this.client.Gauge({
      name,
      help,
      labelNames: [...base, ...extra],
      registers: [this.registry as unknown as PromClient.Registry],
      async collect() {
        this.reset();
        await fill((labels, v) => this.set(labels, v));
      },
    });
  }

  private histogram(name: string, help: string, series: () => Iterable<HistogramSeries>): void {
    this.registry.registerMetric(new HistogramMetric(name, help, series) as never);
  }
}

const labelsOf = (s: Subscription): Labels => ({ subscriber: s.sub.name, topic: s.sub.topic });
