import { SluiceError } from '../core/errors.js';
import type { Logger } from '../core/ports.js';
import type { CompiledPace } from '../pace/config.js';
import { CANCEL, coordinatorKey, MARK, PAUSE, pauseKey, RESUME, type Cancelled } from '../pace/rules.js';
import {
  keyInspection,
  runPage,
  shardInspection,
  type KeyInspection,
  type PaceShardInspection,
  type RunPage,
  type RunQuery,
} from './pace-inspection.js';
import type { PaceHost, ShardPlacement } from './shard-placement.js';
import { pausedIn, wakeWaiting } from './wake.js';

/** The key of a run ID, `<key>@<uuid>` (a key may hold `@`; a UUID does not). */
export function keyOfRun(runId: string): string | undefined {
  const at = runId.lastIndexOf('@');
  return at < 0 ? undefined : runId.slice(0, at);
}

/**
 * An action or view on one shard, as an instance asks the owner of a shard's partition for it (see
 * `SendRouting.control`): JSON, it travels on the requests topic.
 */
export type ControlOp =
  | { readonly kind: 'pause' | 'resume' | 'shard' }
  | { readonly kind: 'runs'; readonly query: RunQuery }
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'cancel'; readonly runId: string };

/**
 * The pace stage's actions on what it holds: pause and resume a subscriber (a record in each of its shards,
 * so that a pause survives a restart and goes with a shard to its next owner), cancel a run not yet started,
 * and the wakes that start the runs a pause held.
 */
export class PaceControl {
  /** Wakes under way (a resume's, or a restart's): `idle()` waits for them. */
  private wakes = 0;

  constructor(
    private readonly placement: () => ShardPlacement | undefined,
    private readonly paces: ReadonlyMap<string, CompiledPace>,
    private readonly log: Logger,
    private readonly onProgress: () => void,
  ) {}

  /** True while no wake is under way. */
  get quiet(): boolean {
    return this.wakes === 0;
  }

  /**
   * Pauses (or resumes) `subscriber` in every shard hosted here; resolves once the records are durable and,
   * for a resume, once the runs it held have started (as far as their rates let them). Returns the shards
   * where it changed anything.
   */
  async pause(subscriber: string, paused: boolean, hosts: readonly PaceHost[] = this.hosted()): Promise<number[]> {
    const pace = this.paceOf(subscriber);
    const changed: number[] = [];
    await Promise.all(
      hosts.map(async (host) => {
        const { reply } = await host.submit({ key: pauseKey(subscriber), type: paused ? PAUSE : RESUME });
        if (reply === true) changed.push(host.shard);
        if (!paused) await this.wake(host, subscriber, pace, false);
      }),
    );
    return changed.sort((a, b) => a - b);
  }

  /**
   * Cancels run `runId` of `subscriber` if its window is open or it waits (it never starts); resolves once
   * that is durable, with where the run was, or null when it was neither (it started, or is unknown).
   * `SHARD_NOT_OWNED` when its key's shard is not hosted here.
   */
  async cancel(subscriber: string, runId: string): Promise<Cancelled> {
    this.paceOf(subscriber);
    const key = keyOfRun(runId);
    if (key === undefined) return null;
    const host = this.hostOf(subscriber, key);
    const { reply } = await host.submit({ key: coordinatorKey(subscriber, key), type: CANCEL, data: runId });
    return reply as Cancelled;
  }

  /** Each shard of `subscriber` hosted here, counted. */
  shards(subscriber: string): PaceShardInspection[] {
    this.paceOf(subscriber);
    return [...this.hosted()].sort((a, b) => a.shard - b.shard).map((h) => shardInspection(h, subscriber));
  }

  /** A page of `subscriber`'s runs in the shards hosted here (see {@link runPage}). */
  runs(subscriber: string, query: RunQuery = {}): RunPage {
    return runPage(this.hosted(), subscriber, this.paceOf(subscriber), query);
  }

  /** `key`'s coordinator of `subscriber`, or undefined when it holds nothing; `SHARD_NOT_OWNED` if not hosted here. */
  key(subscriber: string, key: string): KeyInspection | undefined {
    const pace = this.paceOf(subscriber);
    return keyInspection(this.hostOf(subscriber, key), subscriber, key, pace);
  }

  /**
   * Runs `op` on shard `shard`, which must be hosted here (else `SHARD_NOT_OWNED`): what an owner does for an
   * instance that asked it. Answers what the same call here answers, for that shard alone.
   */
  async runAt(subscriber: string, shard: number, op: ControlOp): Promise<unknown> {
    const pace = this.paceOf(subscriber);
    const host = this.hosted().find((h) => h.shard === shard);
    if (host === undefined)
      throw new SluiceError(
        'SHARD_NOT_OWNED',
        `pace: shard ${shard} of ${JSON.stringify(subscriber)} is not hosted here now`,
      );
    switch (op.kind) {
      case 'pause':
      case 'resume':
        return this.pause(subscriber, op.kind === 'pause', [host]);
      case 'shard':
        return shardInspection(host, subscriber);
      case 'runs':
        return runPage([host], subscriber, pace, { ...op.query, shard });
      case 'key':
        return keyInspection(host, subscriber, op.key, pace) ?? null;
      case 'cancel':
        return this.cancel(subscriber, op.runId);
    }
  }

  /** The host of `key`'s shard, if hosted here (else `SHARD_NOT_OWNED`, or `APP_STATE` before the store is open). */
  private hostOf(subscriber: string, key: string): PaceHost {
    const placement = this.placement();
    if (placement === undefined)
      throw new SluiceError('APP_STATE', 'pace: the store is not open (start the app first)');
    return placement.hostOfEvent(coordinatorKey(subscriber, key), subscriber, { key, event: null });
  }

  /**
   * A shard began serving (at start, or taken over): starts the runs that wait for nothing — their
   * subscriber not paused, no timer of theirs set — as a resume cut short by a crash leaves them.
   */
  served(host: PaceHost): void {
    const subscribers = new Set<string>();
    for (const [group] of host.core.tallies) if (this.paces.has(group)) subscribers.add(group);
    for (const subscriber of subscribers) {
      if (host.core.marked(subscriber, MARK.waiting).size === 0) continue;
      if (pausedIn(host, subscriber)) continue;
      void this.wake(host, subscriber, this.paces.get(subscriber)!, true).catch((error: unknown) =>
        this.log.warn('pace: waking the runs a pause held failed', { subscriber, shard: host.shard, error }),
      );
    }
  }

  private async wake(host: PaceHost, subscriber: string, pace: CompiledPace, untimed: boolean): Promise<void> {
    this.wakes++;
    try {
      await wakeWaiting(host, subscriber, pace, untimed);
    } finally {
      this.wakes--;
      this.onProgress();
    }
  }

  private hosted(): readonly PaceHost[] {
    return this.placement()?.all() ?? [];
  }

  private paceOf(subscriber: string): CompiledPace {
    const pace = this.paces.get(subscriber);
    if (pace === undefined)
      throw new SluiceError('UNKNOWN_SUBSCRIBER', `pace: no paced subscriber is named ${JSON.stringify(subscriber)}`);
    return pace;
  }
}
