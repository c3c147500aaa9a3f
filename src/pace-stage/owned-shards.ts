import { within } from '../core/deadline.js';
import { SluiceError, show } from '../core/errors.js';
import { Waiters } from '../core/waiters.js';
import type { Appended } from './pace-event.js';
import { RunsHandedOut, type RunOut } from './runs-handed-out.js';
import {
  closeHosts,
  type PaceHost as Host,
  type PlacementParts,
  type ShardPlacement,
  type StopSignal,
} from './shard-placement.js';

/** A store owned by partition maps shards to one topic's partitions: it serves one paced subscriber. */
export function checkOnePaced(paces: ReadonlyMap<string, unknown>): void {
  if (paces.size > 1)
    throw new SluiceError(
      'CONFIG_INVALID',
      `pace: a store owned by partition (a Kafka store) serves one paced subscriber, got ${paces.size} (${[...paces.keys()].map((n) => show(n)).join(', ')}); give each app one, or use ownership 'all'`,
    );
}

/**
 * The shards of a store owned by partition (see `Store.ownership`) that this instance owns now. Shard p goes
 * with partition p of the paced subscriber's topic: `own` takes a partition's shard when the consumer group
 * gives the partition here (opening it fences the last owner, then it is restored and served before a
 * delivery of the partition is read); `release` hands it over when the partition is taken away. Changes run
 * one after the other, in the order the consumer reports them.
 *
 * A shard being handed over fires no timer and takes no new event; a run it makes then stays recorded as
 * started, for the next owner to run; it is let go once its runs out are done (a window never runs on two
 * instances at once) or the revoke's deadline fired, and its appends settled.
 */
export class OwnedShards implements ShardPlacement {
  private readonly hosts: (Host | undefined)[];
  private readonly releasing = new Set<number>();
  /** Shards whose partitions' revoke began (see `revoking`), until they are handed over or owned again. */
  private readonly revoked = new Set<number>();
  private readonly runsOut = new RunsHandedOut();
  /** Woken when a shard begins to be handed over: runs waiting to start look again. */
  private readonly handingOver = new Waiters();
  private changes: Promise<void> = Promise.resolve();
  private changing = 0;
  private closed = false;

  constructor(private readonly parts: PlacementParts) {
    this.hosts = new Array<Host | undefined>(parts.store.shards).fill(undefined);
  }

  /** Serving at once: no shard is opened before the consumer is given its partitions (`own`). */
  open(serving: () => void): Promise<void> {
    serving();
    return Promise.resolve();
  }

  /** Takes, restores and serves the shards of `partitions`. */
  own(partitions: readonly number[]): Promise<void> {
    return this.change(() => Promise.all(partitions.map((p) => this.openShard(p))));
  }

  /** A revoke of `partitions` began: no run of their shards starts here (runs waiting to start look again). */
  revoking(partitions: readonly number[]): void {
    for (const p of partitions) if (this.hosts[p] !== undefined) this.revoked.add(p);
    this.handingOver.wake();
  }

  /** Hands the shards of `partitions` over (their runs out awaited until `deadline`). */
  release(partitions: readonly number[], deadline: Promise<void>): Promise<void> {
    return this.change(() => Promise.all(partitions.map((p) => this.closeShard(p, deadline))));
  }

  /** Resolves once the changes asked for so far are done. */
  settled(): Promise<void> {
    return this.changes;
  }

  /** Whether this instance owns shard `shard` now and is not handing it over. */
  owns(shard: number): boolean {
    return this.host(shard) !== undefined;
  }

  /** The partition (and shard) the broker puts `key` of `subscriber` in (for `app.send`). */
  partitionOf(subscriber: string, key: string): number | undefined {
    return this.parts.partitionOf(subscriber, key);
  }

  /**
   * The host an event of `subscriber` goes to: the shard of its delivery's partition (or, for `app.send`, of
   * the partition the broker puts its key in), if this instance owns it now; else `SHARD_NOT_OWNED`.
   */
  hostOfEvent(_key: string, subscriber: string, appended: Appended): Host {
    const key = appended.key;
    const shard = appended.source?.partition ?? this.parts.partitionOf(subscriber, key);
    const host = shard === undefined ? undefined : this.host(shard);
    if (host !== undefined) return host;
    throw new SluiceError(
      'SHARD_NOT_OWNED',
      shard === undefined
        ? `pace: subscriber ${show(subscriber)}'s broker cannot say which partition a key lands in`
        : `pace: key ${show(key.slice(0, 40))} of subscriber ${show(subscriber)} is in partition ${shard}, which this instance does not own now; send it where that partition is read`,
    );
  }

  /** The hosts of the shards owned here. */
  all(): Host[] {
    return this.hosts.filter((h): h is Host => h !== undefined);
  }

  /** No change under way, and no append pending. */
  quiet(): boolean {
    return this.changing === 0 && this.hosts.every((h) => h === undefined || h.pending === 0);
  }

  /** A run of `shard` leaves for the workers; false (it stays for the next owner) while the shard is handed over. */
  runLeaves(run: RunOut, shard: number): boolean {
    if (this.releasing.has(shard) || this.revoked.has(shard)) return false;
    this.runsOut.add(run, shard);
    return true;
  }

  /**
   * Whether `run`, out for the workers, may start an attempt now: its shard is still here and not being
   * handed over, and `inSession` (the consumer's) says the group may still count the shard's partition as
   * this instance's. While it may not, the answer is a promise, which resolves true once it may, or false
   * once it never will here (the shard handed over, the subscription stopping): the run stays recorded as started, for
   * the shard's next owner. A member that stalled past its session (its process stopped) may have been
   * replaced before it learns it: the runs it had handed out wait until its consumer hears from the group.
   */
  mayStart(
    run: RunOut,
    inSession: (partition: number) => true | Promise<void>,
    stop: StopSignal,
  ): boolean | Promise<boolean> {
    const shard = this.runsOut.shardOf(run);
    if (shard === undefined) return false;
    const here = (): boolean =>
      !stop.stopping() &&
      this.runsOut.shardOf(run) === shard &&
      !this.releasing.has(shard) &&
      !this.revoked.has(shard) &&
      this.hosts[shard] !== undefined;
    if (!here()) return false;
    const session = inSession(shard);
    if (session === true) return true;
    return this.waitToStart(shard, session, here, inSession, stop);
  }

  private async waitToStart(
    shard: number,
    first: Promise<void>,
    here: () => boolean,
    inSession: (partition: number) => true | Promise<void>,
    stop: StopSignal,
  ): Promise<boolean> {
    this.parts.log.warn('pace: the group has not heard from this instance within its session; runs wait to start', {
      shard,
    });
    for (let session: true | Promise<void> = first; session !== true; session = inSession(shard)) {
      await Promise.race([session, this.handingOver.next(), stop.stopped]);
      if (!here()) return false;
    }
    return true;
  }

  /**
   * Whether `run` (as it was handed out) is still this instance's to run: false once its shard was handed
   * over (past the revoke's deadline, its runs out are let go), even if the shard came back since.
   */
  holds(run: RunOut): boolean {
    return this.runsOut.shardOf(run) !== undefined;
  }

  /** The host that records the end of `run`: its shard's, if this instance still holds it. */
  hostOfRun(run: RunOut): Host | undefined {
    const shard = this.runsOut.shardOf(run);
    return shard === undefined ? undefined : this.hosts[shard];
  }

  /** `run` finished, or will not finish here. */
  runEnded(run: RunOut): void {
    this.runsOut.remove(run);
  }

  /**
   * No more changes: the app is closing. A restore under way ends first (until `deadline`), then the hosts
   * owned then are closed (see {@link closeHosts}).
   */
  async close(deadline: Promise<void>): Promise<void> {
    this.closed = true;
    await within(this.changes, deadline);
    await closeHosts(this.all(), deadline);
  }

  /** The host of shard `shard` if this instance owns it and is not handing it over. */
  private host(shard: number): Host | undefined {
    return this.releasing.has(shard) ? undefined : this.hosts[shard];
  }

  private change(step: () => Promise<unknown>): Promise<void> {
    this.changing++;
    const next = this.changes
      .then(async () => {
        if (!this.closed) await step();
      })
      .finally(() => {
        this.changing--;
        this.parts.onProgress();
      });
    this.changes = next.catch(() => {});
    return next;
  }

  private async openShard(shard: number): Promise<void> {
    const { store, log } = this.parts;
    if (shard >= store.shards)
      throw new SluiceError(
        'CONFIG_INVALID',
        `pace: partition ${shard} has no shard: the store has ${store.shards} (one per partition of the topic)`,
      );
    this.revoked.delete(shard); // owned again before its revoke handed it over: it was not handed over
    if (this.hosts[shard] !== undefined) return;
    const shardLog = await store.openShard!(shard);
    const host = this.parts.makeHost(shard, shardLog);
    try {
      await host.recover();
    } catch (error) {
      await host.close();
      await store.closeShard!(shard).catch(() => {});
      throw error;
    }
    this.hosts[shard] = host;
    host.serve();
    log.debug('pace: shard restored and serving', { shard, lsn: shardLog.durableLsn() });
  }

  /** Hands shard `shard` over: see the class's comment. */
  protected async closeShard(shard: number, deadline: Promise<void>): Promise<void> {
    const host = this.hosts[shard];
    if (host === undefined) return void this.revoked.delete(shard);
    this.releasing.add(shard);
    this.handingOver.wake();
    host.stopTimers();
    try {
      if (!(await this.runsOut.none(shard, deadline)))
        this.parts.log.warn('pace: runs of a shard handed over were still running; its next owner runs them again', {
          shard,
        });
      await within(host.drained(), deadline);
      await host.close();
      await this.parts.store.closeShard!(shard);
    } finally {
      this.hosts[shard] = undefined;
      this.releasing.delete(shard);
      this.revoked.delete(shard);
      this.runsOut.forget(shard);
    }
  }
}
