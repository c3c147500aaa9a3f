import { SluiceError, show } from '../core/errors.js';
import type { Cancelled } from '../pace/rules.js';
import type { Pacer } from '../pace-stage/pacer.js';
import { keyOfRun } from '../pace-stage/pace-control.js';
import { RoutedControl } from './routed-control.js';
import type { KeyInspection, PaceShardInspection, RunPage, RunQuery } from '../pace-stage/pace-inspection.js';
import type { Broker } from '../core/ports.js';
import type { DeadLetterCounts } from '../pipeline/dead-letters.js';
import {
  DeadLetterTopic,
  type DeadLetterPage,
  type DeadLetterQuery,
  type ReplayOptions,
  type ReplayResult,
} from './dead-letter-replay.js';
import type { Subscription } from '../pipeline/subscription.js';
import type { AppHealth, AppStatus, SubscriberHealth } from '../telemetry/health.js';
import { AppSettings } from './app-settings.js';

/**
 * A paced subscriber's pace, as `app.inspect()` tells it: over the shards hosted by this instance.
 *
 * @category Inspect
 */
export interface PaceInspection {
  /** How its starts gather: `debounce`, `batch`, or `each` (each start a run of its own). */
  readonly kind: 'debounce' | 'batch' | 'each';
  /** True when it is paused in every shard (and there is one): its runs wait. */
  readonly paused: boolean;
  /**
   * Each shard, in shard order: those hosted here, and — with a Kafka store owned by partition that routes
   * `app.send` — those of the other instances, asked of their owners.
   */
  readonly shards: readonly PaceShardInspection[];
}

/**
 * One running subscriber, as `app.inspect()` tells it: its health (partitions, last poll, lag), what it
 * has in flight, its dead letters, and its pace.
 *
 * @category Inspect
 */
export interface SubscriberInspection extends SubscriberHealth {
  /** Its consumer group. */
  readonly group: string;
  /** Deliveries (or runs) being handled, waiting for a worker or for a retry. */
  readonly inFlight: number;
  /** What became of its dead letters since `start()`. */
  readonly deadLetters: Readonly<DeadLetterCounts>;
  /** Its topic for dead letters, or false when it has none (`deadLetter: false`). */
  readonly deadLetterTopic: string | false;
  /** For a paced subscriber. */
  readonly pace?: PaceInspection;
}

/**
 * What `app.inspect()` answers.
 *
 * @category Inspect
 */
export interface AppInspection {
  /** The app's name. */
  readonly app: string;
  /** Where the app is (as `app.health()` says). */
  readonly status: AppStatus;
  /** Each running subscriber, in the order they were mounted. */
  readonly subscribers: readonly SubscriberInspection[];
}

/** What the inspection reads of a running app. */
export interface ControlSource {
  readonly state: () => string;
  readonly subscriptions: () => readonly Subscription[];
  /** The app's health, with each subscriber's lag. */
  readonly health: () => Promise<AppHealth>;
  /** The pace stage, when the app has paced subscribers and runs. */
  readonly pacer: () => Pacer | undefined;
  /** The broker a subscriber is mounted on. */
  readonly brokerOf: (subscriber: string) => Broker | undefined;
}

/**
 * What an {@link App} shows of itself while it runs, and the actions on what is stuck: `inspect`,
 * `inspectRuns`, `inspectKey`, `inspectDeadLetters`; `pause`, `resume`, `cancel`, `replayDeadLetters` (see
 * docs/console.md).
 *
 * @category App
 */
export abstract class AppControl extends AppSettings {
  /** @internal What the inspection reads. */
  protected abstract get control(): ControlSource;

  /**
   * What became of each running subscriber's dead letters since `start()`, by name: published whole,
   * published stripped (the broker refused the whole one), lost (refused even stripped), dropped.
   * Empty before `start()` and after `stop()`.
   */
  deadLetters(): Readonly<Record<string, Readonly<DeadLetterCounts>>> {
    return Object.fromEntries(this.control.subscriptions().map((s) => [s.sub.name, { ...s.deadLetters }]));
  }

  /**
   * The app's health: its status (`ready` once `start()` resolved: its groups joined and its pace shards
   * restored; `degraded` while a subscriber has not polled, or an attempt has run, past the thresholds of
   * `options.health`) and each running subscriber's partitions, last poll, oldest attempt and lag (asked of
   * the broker). The HTTP server's `/health/live` and `/health/ready` answer from the same, without the lag.
   */
  health(): Promise<AppHealth> {
    return this.control.health();
  }

  /**
   * The running subscribers: their partitions, lag (asked of the broker), what they have in flight, their dead
   * letters and, for paced ones, each shard: open windows, starts waiting, keys with runs out, paused or not
   * (the shards of other instances asked of their owners, as `app.send` asks them). Counts only: no key's state
   * is read, whatever the key space.
   *
   * @throws {@link SluiceError} `SEND_TIMEOUT` when an owner asked did not answer within `sendTimeoutMs`.
   */
  async inspect(): Promise<AppInspection> {
    const { health, subscriptions, pacer } = this.control;
    const h = await health();
    const subs = subscriptions();
    const paced = pacer();
    const shardsOf = async (s: Subscription) =>
      s.sub.pace !== undefined && paced !== undefined ? new RoutedControl(s.sub.name, paced, s.routing).shards() : [];
    const shardLists = await Promise.all(
      h.subscribers.map((sh, i) => shardsOf(subs.find((x) => x.sub.name === sh.name) ?? subs[i]!)),
    );
    return {
      app: this.name,
      status: h.status,
      subscribers: h.subscribers.map((sh, i) => {
        const s = subs.find((x) => x.sub.name === sh.name) ?? subs[i]!;
        const p = s.sub.pace;
        const shards = shardLists[i]!;
        return {
          ...sh,
          group: s.sub.group,
          inFlight: s.inFlight,
          deadLetters: { ...s.deadLetters },
          deadLetterTopic: s.sub.deadLetter,
          ...(p !== undefined
            ? { pace: { kind: p.kind, paused: shards.length > 0 && shards.every((x) => x.paused), shards } }
            : {}),
        };
      }),
    };
  }

  /**
   * A page of a paced subscriber's runs in one stage — `gathering` (open windows: key, events, run ID, when it
   * closes), `waiting` (and for what: its rate, the pause, a run before it), `running` — newest first, over
   * every shard, one after another (another instance's asked of its owner). A page reads the states of its
   * own keys only.
   *
   * @throws {@link SluiceError} `UNKNOWN_SUBSCRIBER`, `CONFIG_INVALID` (not paced; a bad `limit`, `stage` or
   *   `after`), `APP_STATE` unless the app runs, `SEND_TIMEOUT` when an owner asked did not answer.
   */
  async inspectRuns(subscriber: string, query: RunQuery = {}): Promise<RunPage> {
    return this.paced(subscriber, 'inspectRuns').runs(query);
  }

  /**
   * One key's coordinator of a paced subscriber: its runs (window, waiting, out), its rate's recent starts,
   * its timer; undefined when it holds nothing.
   *
   * @throws {@link SluiceError} as {@link AppControl.inspectRuns}; `SHARD_NOT_OWNED` when another instance
   *   owns the key's shard and the store does not route to it (a store owned by partition without routes).
   */
  async inspectKey(subscriber: string, key: string): Promise<KeyInspection | undefined> {
    if (typeof key !== 'string')
      throw new SluiceError(
        'CONFIG_INVALID',
        `App "${this.name}": inspectKey(): key must be a string, got ${show(key)}`,
      );
    return this.paced(subscriber, 'inspectKey').key(key);
  }

  /**
   * Pauses a paced subscriber: events are still journaled and windows close, but no run starts; runs ready
   * wait (`waitingFor: 'pause'`) until {@link AppControl.resume}. The pause is a record in each shard's log:
   * it survives a restart, and goes with a shard to its next owner. Runs already out finish. With a Kafka store
   * owned by partition that routes `app.send`, the other instances' shards are paused by their owners.
   *
   * @returns the shards where it was not paused before.
   */
  async pause(subscriber: string): Promise<readonly number[]> {
    return this.paced(subscriber, 'pause').pause(true);
  }

  /**
   * Ends a pause: the runs that waited start, highest `order` first and, with `turns: 'key'`, keys taking
   * turns, as far as their rates let them. Resolves once they have started.
   *
   * @returns the shards where it was paused.
   */
  async resume(subscriber: string): Promise<readonly number[]> {
    return this.paced(subscriber, 'resume').pause(false);
  }

  /**
   * Cancels a run that has not started — its window open, or waiting — by its ID: it never runs (its events
   * are dropped; their IDs stay remembered). Resolves once that is durable, with where the run was, or null
   * when it was neither (it started already, or there is no such run).
   */
  async cancel(subscriber: string, runId: string): Promise<Cancelled> {
    if (typeof runId !== 'string')
      throw new SluiceError(
        'CONFIG_INVALID',
        `App "${this.name}": cancel(): runId must be a string, got ${show(runId)}`,
      );
    return this.paced(subscriber, 'cancel').cancel(runId, keyOfRun(runId));
  }

  /**
   * A page of a subscriber's dead letters, oldest first, partition after partition: where each came from, why,
   * its value's first 1,000 characters, and whether it was replayed.
   *
   * @throws {@link SluiceError} `UNKNOWN_SUBSCRIBER`; `CONFIG_INVALID` for a subscriber without a dead-letter
   *   topic, on a broker that cannot read one, or a bad query; `APP_STATE` unless the app runs.
   */
  async inspectDeadLetters(subscriber: string, query: DeadLetterQuery = {}): Promise<DeadLetterPage> {
    return this.deadLetterTopic(subscriber, 'inspectDeadLetters').page(query);
  }

  /**
   * Publishes dead letters again to the topics they came from (their key, value and own headers, and
   * `x-sluice-replay-of` naming the letter), so that their subscriber handles them again. Each letter is
   * replayed once ever: a replay records it (in the topic `<dead-letter topic>.replayed`) before it publishes it,
   * and a later replay skips it. A crash between the two loses that letter's replay (it shows as replayed) and
   * never publishes it twice. One replay at a time per broker in an app.
   *
   * @throws {@link SluiceError} as {@link AppControl.inspectDeadLetters}; what the broker's publish rejects with.
   */
  async replayDeadLetters(subscriber: string, options: ReplayOptions = {}): Promise<ReplayResult> {
    return this.deadLetterTopic(subscriber, 'replayDeadLetters').replay(options);
  }

  /** The dead-letter topic of `subscriber`, which must be a running subscriber with one, on a broker that reads it. */
  private deadLetterTopic(subscriber: string, what: string): DeadLetterTopic {
    const s = this.running(subscriber, what);
    const broker = this.control.brokerOf(subscriber);
    const who = `App "${this.name}": ${what}(${show(subscriber)})`;
    if (s.sub.deadLetter === false)
      throw new SluiceError('CONFIG_INVALID', `${who}: the subscriber has no dead-letter topic`);
    if (broker?.readTopic === undefined)
      throw new SluiceError('CONFIG_INVALID', `${who}: its broker (${broker?.kind ?? 'none'}) cannot read topics`);
    return new DeadLetterTopic(broker, s.sub.deadLetter, who);
  }

  /** The subscription of `subscriber`, which must be a subscriber of the running app. */
  private running(subscriber: string, what: string): Subscription {
    const { state, subscriptions } = this.control;
    if (state() !== 'running')
      throw new SluiceError('APP_STATE', `App "${this.name}": ${what}() needs a running app, it is ${state()}`);
    const s = subscriptions().find((x) => x.sub.name === subscriber);
    if (s === undefined)
      throw new SluiceError('UNKNOWN_SUBSCRIBER', `App "${this.name}": no subscriber is named ${show(subscriber)}`);
    return s;
  }

  /** The pace control for an action on `subscriber`, which must be a paced subscriber of the running app. */
  private paced(subscriber: string, what: string): RoutedControl {
    const s = this.running(subscriber, what);
    const pacer = this.control.pacer();
    if (s.sub.pace === undefined || pacer === undefined)
      throw new SluiceError('CONFIG_INVALID', `App "${this.name}": subscriber ${show(subscriber)} is not paced`);
    return new RoutedControl(subscriber, pacer, s.routing);
  }
}
