import { Waiters } from '../core/waiters.js';

/**
 * The paced runs handed to a subscriber's workers and not yet finished or let go, each with its shard: a
 * shard being handed over to another instance waits until none of its runs is out, so that no window runs
 * on two instances at once.
 */
export class RunsOut {
  private readonly shards = new Map<string, number>();
  private readonly counts = new Map<number, number>();
  private readonly changed = new Waiters();

  /** Run `id` of shard `shard` left for the workers. */
  add(id: string, shard: number): void {
    if (this.shards.has(id)) return; // handed out again (resumed): still one run out
    this.shards.set(id, shard);
    this.counts.set(shard, (this.counts.get(shard) ?? 0) + 1);
  }

  /** The shard of run `id`, if it is out. */
  shardOf(id: string): number | undefined {
    return this.shards.get(id);
  }

  /** Run `id` finished or was let go. */
  remove(id: string): void {
    const shard = this.shards.get(id);
    if (shard === undefined) return;
    this.shards.delete(id);
    const left = this.counts.get(shard)! - 1;
    if (left === 0) this.counts.delete(shard);
    else this.counts.set(shard, left);
    this.changed.wake();
  }

  /** Resolves once no run of `shard` is out, or `deadline` fired first (false then). */
  async none(shard: number, deadline: Promise<void>): Promise<boolean> {
    let late = false;
    const lateNow = deadline.then(() => {
      late = true;
    });
    while (!late && this.counts.has(shard)) await Promise.race([this.changed.next(), lateNow]);
    return !this.counts.has(shard);
  }

  /** Forgets the runs of `shard` (it was handed over: its new owner runs them again). */
  forget(shard: number): void {
    for (const [id, s] of this.shards) if (s === shard) this.shards.delete(id);
    this.counts.delete(shard);
    this.changed.wake();
  }
}
