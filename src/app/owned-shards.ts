import { SluiceError } from '../core/errors.js';
import type { Faults, Logger, ShardLog, Store } from '../core/ports.js';
import type { PaceOutput, PaceState } from '../pace/rules.js';
import type { ShardHost } from '../store/shard-host.js';
import { RunsOut, type RunOut } from './runs-out.js';

type Host = ShardHost<PaceState, PaceOutput>;

/** What {@link OwnedShards} works with. */
export interface OwnedShardsParts {
  readonly store: Store;
  readonly log: Logger;
  /** A host for a shard's log, not yet recovered. */
  readonly makeHost: (shard: number, log: ShardLog) => Host;
  /** Called when an ownership change is done: `app.idle()` looks again. */
  readonly onProgress: () => void;
  /** The simulator's broken behaviours (see `Faults`): none by default. */
  readonly faults?: Faults;
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
export class OwnedShards {
  private readonly hosts: (Host | undefined)[];
  private readonly releasing = new Set<number>();
  private readonly runsOut = new RunsOut();
  private changes: Promise<void> = Promise.resolve();
  private changing = 0;
  private closed = false;

  constructor(private readonly parts: OwnedShardsParts) {
    this.hosts = new Array<Host | undefined>(parts.store.shards).fill(undefined);
  }

  /** Takes, restores and serves the shards of `partitions`. */
  own(partitions: readonly number[]): Promise<void> {
    return this.change(() => Promise.all(partitions.map((p) => this.openShard(p))));
  }

  /** Hands the shards of `partitions` over (their runs out awaited until `deadline`). */
  release(partitions: readonly number[], deadline: Promise<void>): Promise<void> {
    return this.change(() => Promise.all(partitions.map((p) => this.closeShard(p, deadline))));
  }

  /** Resolves once the changes asked for so far are done. */
  settled(): Promise<void> {
    return this.changes;
  }

  /** The host of shard `shard` if this instance owns it and is not handing it over. */
  host(shard: number): Host | undefined {
    return this.releasing.has(shard) ? undefined : this.hosts[shard];
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
    if (this.releasing.has(shard)) return false;
    this.runsOut.add(run, shard);
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

  /** No more changes: the app is closing (and closes the hosts owned then). */
  close(): Promise<void> {
    this.closed = true;
    return this.changes;
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

  private async closeShard(shard: number, deadline: Promise<void>): Promise<void> {
    const host = this.hosts[shard];
    if (host === undefined || this.parts.faults?.keepShardsOnRevoke) return;
    this.releasing.add(shard);
    host.stopTimers();
    try {
      if (!(await this.runsOut.none(shard, deadline)))
        this.parts.log.warn('pace: runs of a shard handed over were still running; its next owner runs them again', {
          shard,
        });
      await Promise.race([host.drained(), deadline]);
      await host.close();
      await this.parts.store.closeShard!(shard);
    } finally {
      this.hosts[shard] = undefined;
      this.releasing.delete(shard);
      this.runsOut.forget(shard);
    }
  }
}
