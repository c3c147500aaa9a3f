import type { Subscription } from '../pipeline/subscription.js';
import type { HealthThresholds } from './telemetry-options.js';

/** Where an app is in its life (the lifecycle's own states, named here so that health needs nothing of it). */
type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * Where an app is, for probes: `starting` (not started yet, or joining its groups and restoring its pace
 * shards), `ready` (running), `degraded` (running, but a subscriber has not polled, or an attempt has run,
 * past its threshold: see {@link HealthOptions}), `stopping`, `stopped`.
 *
 * @category Observability
 */
export type AppStatus = 'starting' | 'ready' | 'degraded' | 'stopping' | 'stopped';

/**
 * One running subscriber's health.
 *
 * @category Observability
 */
export interface SubscriberHealth {
  /** The subscriber's name. */
  readonly name: string;
  /** Its topic. */
  readonly topic: string;
  /** The partitions its consumer owns. */
  readonly assignedPartitions: readonly number[];
  /** The partitions paused because their uncommitted deliveries reached `maxUncommitted`. */
  readonly paused: readonly number[];
  /**
   * How long ago its consumer last polled the broker, or it took messages (a consumer with nothing left to
   * read counts as polling): measured between calls of `health()`, so exact to within a probe's period.
   */
  readonly lastPollAgoMs: number;
  /**
   * How long the oldest attempt running has run (to within the handler timeout's watchdog period, at most a
   * second); 0 when none runs.
   */
  readonly oldestInFlightMs: number;
  /** Messages past the group's committed offset over the partitions it owns (0 where the consumer cannot tell). */
  readonly lag: number;
  /**
   * True when the broker did not tell the lag within a second (an outage, say): `lag` is then the last
   * count it gave. Probes read no lag: false there.
   */
  readonly lagStale: boolean;
}

/**
 * What `app.health()` answers.
 *
 * @category Observability
 */
export interface AppHealth {
  /** Where the app is. */
  readonly status: AppStatus;
  /** True unless `degraded` or `stopped`: what `/health/live` answers 200 for. */
  readonly live: boolean;
  /** True when `ready`: what `/health/ready` answers 200 for. */
  readonly ready: boolean;
  /** Why the app is degraded, one line per threshold passed (empty otherwise). */
  readonly reasons: readonly string[];
  /** Each running subscriber, in the order they were mounted (none before `start()` and once stopped). */
  readonly subscribers: readonly SubscriberHealth[];
}

/** The health of the subscriptions at `nowMs`, their lag read with `lagOf` (probes pass none: no broker round trip). */
export async function healthOf(
  state: State,
  subscriptions: readonly Subscription[],
  nowMs: number,
  thresholds: HealthThresholds,
  lagOf?: (s: Subscription) => Promise<LagCount>,
): Promise<AppHealth> {
  const subscribers = await Promise.all(subscriptions.map((s) => subscriberHealth(s, nowMs, lagOf)));
  const reasons = state === 'running' ? subscribers.flatMap((s) => reasonsOf(s, thresholds)) : [];
  const status = statusOf(state, reasons.length > 0);
  return {
    status,
    live: status !== 'degraded' && status !== 'stopped',
    ready: status === 'ready',
    reasons,
    subscribers,
  };
}

async function subscriberHealth(
  s: Subscription,
  nowMs: number,
  lagOf: ((s: Subscription) => Promise<LagCount>) | undefined,
): Promise<SubscriberHealth> {
  const probe = s.probe;
  const lag = lagOf === undefined ? { lag: 0, stale: false } : await lagOf(s);
  return {
    name: s.sub.name,
    topic: s.sub.topic,
    assignedPartitions: probe.assigned(),
    paused: probe.paused(),
    lastPollAgoMs: probe.lastPollAgoMs(nowMs),
    oldestInFlightMs: probe.oldestInFlightMs(nowMs),
    lag: lag.lag,
    lagStale: lag.stale,
  };
}

function reasonsOf(s: SubscriberHealth, t: HealthThresholds): string[] {
  const reasons: string[] = [];
  if (s.lastPollAgoMs > t.maxPollGapMs)
    reasons.push(`subscriber ${s.name}: no poll for ${s.lastPollAgoMs} ms (maxPollGapMs ${t.maxPollGapMs})`);
  if (s.oldestInFlightMs > t.maxInFlightMs)
    reasons.push(
      `subscriber ${s.name}: an attempt has run for ${s.oldestInFlightMs} ms (maxInFlightMs ${t.maxInFlightMs})`,
    );
  return reasons;
}

function statusOf(state: State, failing: boolean): AppStatus {
  if (state === 'new' || state === 'starting') return 'starting';
  if (state === 'running') return failing ? 'degraded' : 'ready';
  return state;
}

/** A subscription's lag over its partitions, and whether it is the last count the broker told (stale). */
export interface LagCount {
  readonly lag: number;
  readonly stale: boolean;
}

/**
 * A subscription's lag: its partitions' lags summed, as the broker tells within a bound (past it, the last
 * count, stale).
 */
export async function lagOf(s: Subscription): Promise<LagCount> {
  const { lags, stale } = await s.probe.partitionLags();
  return { lag: lags.reduce((sum, p) => sum + p.lag, 0), stale };
}
