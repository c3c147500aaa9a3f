import { Waiters } from '../core/waiters.js';

/** A run as handed out: each hand-out of a run (a resume after a restore is another) is its own object. */
export interface RunOut {
  readonly id: string;
}

/**
 * The paced runs handed to a subscriber's workers and not yet finished or let go, each with its shard: a
 * shard being handed over to another instance waits until none of its runs is out, so that no window runs
 * on two instances at once. A run is out by the object it was handed out as: once its shard was handed
 * over, the work of that hand-out is stale — it neither counts nor ends the run handed out again (under
 * the same ID) by a later restore of the shard on this instance.
 */
export class RunsHandedOut {
  private readonly out = new Map<string, { readonly shard: number; readonly runs: Set<RunOut> }>();
  private readonly counts = new Map<number, number>();
  private readonly changed = new Waiters();

  /** Run `run` of shard `shard` left for the workers. */
  add(run: RunOut, shard: number): void {
    const entry = this.out.get(run.id);
    if (entry !== undefined) return void entry.runs.add(run); // handed out again: still one run out
    this.out.set(run.id, { shard, runs: new Set([run]) });
    this.counts.set(shard, (this.counts.get(shard) ?? 0) + 1);
  }

  /** The shard of `run`, if it is out (as this hand-out of it). */
  shardOf(run: RunOut): number | undefined {
    const entry = this.out.get(run.id);
    return entry?.runs.has(run) ? entry.shard : undefined;
  }

  /** `run` finished or was let go (nothing, for a hand-over's stale work). */
  remove(run: RunOut): void {
    const entry = this.out.get(run.id);
    if (entry === undefined || !entry.runs.delete(run) || entry.runs.size > 0) return;
    this.out.delete(run.id);
    const shard = entry.shard;
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
    for (const [id, entry] of this.out) if (entry.shard === shard) this.out.delete(id);
    this.counts.delete(shard);
    this.changed.wake();
  }
}
