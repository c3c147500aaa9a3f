import type { Cancelled } from '../pace/rules.js';
import type { ControlOp } from '../pace-stage/pace-control.js';
import type { KeyInspection, PaceShardInspection, RunPage, RunQuery } from '../pace-stage/pace-inspection.js';
import type { Pacer } from '../pace-stage/pacer.js';
import type { SendRouting } from '../pace-stage/send-routing.js';

/**
 * A paced subscriber's views and actions over all its shards: those hosted here, and — where its store is
 * owned by partition and routes `app.send` (see `Store.routes`) — those of the other instances, asked of
 * their owners over the same requests topic, as `app.send` is. Without routing, the shards hosted here.
 */
export class RoutedControl {
  constructor(
    private readonly subscriber: string,
    private readonly pacer: Pacer,
    private readonly routing: SendRouting | undefined,
  ) {}

  /** Each shard, counted, in shard order. */
  async shards(): Promise<PaceShardInspection[]> {
    if (this.routing === undefined) return this.pacer.control.shards(this.subscriber);
    return (await this.everyShard({ kind: 'shard' })) as PaceShardInspection[];
  }

  /** Pauses (or resumes) every shard; the shards where it changed anything. */
  async pause(paused: boolean): Promise<number[]> {
    if (this.routing === undefined) return this.pacer.control.pause(this.subscriber, paused);
    const changed = (await this.everyShard({ kind: paused ? 'pause' : 'resume' })) as number[][];
    return changed.flat().sort((a, b) => a - b);
  }

  /** A page of runs: shard after shard, each answered where it is hosted. */
  async runs(query: RunQuery): Promise<RunPage> {
    const { routing, pacer, subscriber } = this;
    if (routing === undefined) return pacer.control.runs(subscriber, query);
    pacer.control.runs(subscriber, { ...query, shard: -1 }); // checks the query here, before anything is asked
    const limit = query.limit ?? 50;
    const first = query.after === undefined ? 0 : (JSON.parse(query.after) as [number, string])[0];
    const runs: RunPage['runs'][number][] = [];
    for (let shard = first; shard < pacer.shards; shard++) {
      if (query.shard !== undefined && shard !== query.shard) continue;
      if (runs.length >= limit) return { runs, next: JSON.stringify([shard, '']) };
      const asked: RunQuery = {
        ...query,
        shard,
        limit: limit - runs.length,
        ...(shard === first && query.after !== undefined ? { after: query.after } : { after: undefined }),
      };
      const page = (await routing.control(shard, { kind: 'runs', query: asked })) as RunPage;
      runs.push(...page.runs);
      if (page.next !== undefined) return { runs, next: page.next };
    }
    return { runs };
  }

  /** One key's coordinator, asked where its shard is hosted. */
  async key(key: string): Promise<KeyInspection | undefined> {
    const shard = this.routedShard(key);
    if (shard === undefined) return this.pacer.control.key(this.subscriber, key);
    return ((await this.routing!.control(shard, { kind: 'key', key }, key)) as KeyInspection | null) ?? undefined;
  }

  /** Cancels a run, where its key's shard is hosted. */
  async cancel(runId: string, key: string | undefined): Promise<Cancelled> {
    const shard = key === undefined ? undefined : this.routedShard(key);
    if (shard === undefined) return this.pacer.control.cancel(this.subscriber, runId);
    return (await this.routing!.control(shard, { kind: 'cancel', runId }, key)) as Cancelled;
  }

  /** The shard of `key` when it is to be asked through routing; undefined to answer here. */
  private routedShard(key: string): number | undefined {
    if (this.routing === undefined) return undefined;
    return this.pacer.partitionOf(this.subscriber, key);
  }

  /** `op` on every shard, each where it is hosted, in shard order. */
  private everyShard(op: ControlOp): Promise<unknown[]> {
    const routing = this.routing!;
    return Promise.all(Array.from({ length: this.pacer.shards }, (_, shard) => routing.control(shard, op)));
  }
}
