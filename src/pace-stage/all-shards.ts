import { shardOf } from '../shard/shard-of.js';
import type { RunOut } from './runs-handed-out.js';
import { closeHosts, type PaceHost, type PlacementParts, type ShardPlacement } from './shard-placement.js';

/**
 * Every shard of the store opened and served here (a store whose `ownership` is `all`: the file and memory
 * stores, which one process holds whole). An event goes to the shard of its key, `shardOf(key, shards)`
 * among all of the store's shards, the one a restart replays it from; every run leaves, and every run handed
 * out stays this instance's to run.
 */
export class AllShards implements ShardPlacement {
  /** One per shard of the store, made by `open`. */
  private hosts: PaceHost[] = [];

  constructor(private readonly parts: PlacementParts) {}

  /**
   * Recovers every shard, then lets each serve: no run leaves (to finish, and journal its end) while a shard
   * has not replayed. A shard that cannot be recovered (`STORE_CORRUPT`) closes the store again, letting its
   * lock go.
   */
  async open(serving: () => void): Promise<void> {
    const { store, log } = this.parts;
    const hosts = this.makeHosts();
    try {
      for (const host of hosts) await host.recover();
    } catch (error) {
      await Promise.all(hosts.map((h) => h.close()));
      await store
        .close()
        .catch((closing: unknown) =>
          log.warn('pace: the store did not close after a failed recovery', { error: closing }),
        );
      this.parts.storeClosed();
      throw error;
    }
    for (const host of hosts) host.serve();
    serving();
  }

  /** The host of the event's key's shard. */
  hostOfEvent(key: string): PaceHost {
    return this.host(key);
  }

  /** The host of the run's key's shard. */
  hostOfRun(_run: RunOut, key: string): PaceHost {
    return this.host(key);
  }

  /** Every run leaves. */
  runLeaves(): boolean {
    return true;
  }

  /** Nothing to forget: no run is counted out. */
  runEnded(): void {}

  /** Always. */
  mayStart(): boolean {
    return true;
  }

  /** Always: a shard here stays here. */
  holds(): boolean {
    return true;
  }

  /** Nothing: no shard follows a partition. */
  own(): Promise<void> {
    return Promise.resolve();
  }

  /** Nothing: every shard stays here. */
  revoking(): void {}

  /** Nothing: no shard follows a partition. */
  release(): Promise<void> {
    return Promise.resolve();
  }

  /** At once: no ownership changes. */
  settled(): Promise<void> {
    return Promise.resolve();
  }

  /** Undefined: shards do not follow partitions. */
  partitionOf(): undefined {
    return undefined;
  }

  /** False: no shard is owned by partition. */
  owns(): boolean {
    return false;
  }

  /** Every shard's host. */
  all(): readonly PaceHost[] {
    return this.hosts;
  }

  /** No append pending. */
  quiet(): boolean {
    return this.hosts.every((h) => h.pending === 0);
  }

  /** Closes every host (see {@link closeHosts}). */
  close(deadline: Promise<void>): Promise<void> {
    return closeHosts(this.hosts, deadline);
  }

  /** Makes a host for every shard of the store, not yet recovered. */
  protected makeHosts(): readonly PaceHost[] {
    const { store, makeHost } = this.parts;
    this.hosts = Array.from({ length: store.shards }, (_, shard) => makeHost(shard, store.log(shard)));
    return this.hosts;
  }

  /** The host of a key's shard: by the store's shard count, the one a restart replays the key from. */
  protected host(key: string): PaceHost {
    return this.hosts[shardOf(key, this.parts.store.shards)]!;
  }
}
