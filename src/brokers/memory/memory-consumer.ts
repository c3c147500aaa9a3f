import type { InboundMessage } from '../../core/message.js';
import type { ConsumeRequest, Consumer, PartitionLag } from '../../core/ports.js';
import type { GroupTopic } from './group.js';
import { MemoryRequests } from './memory-requests.js';

interface Owned {
  readonly partition: number;
  position: number;
  paused: boolean;
  /** Being revoked: nothing more is handed out, commits still count. */
  revoked: boolean;
  /** False until the request's `onAssign` for this assignment settled: nothing is handed out before. */
  ready: boolean;
}

/** A member of a memory consumer group: reads its partitions from their positions, commits to the group. */
export class MemoryConsumer implements Consumer {
  private owned: Owned[] = [];
  private cursor = 0;
  private closed = false;
  /** Assignments given to this member (see `Consumer.assignments`). */
  private assigns = 0;
  /** The requests topic read beside the topic, if the request names one (see `ConsumeRequest.requests`). */
  private readonly requests: MemoryRequests | undefined;

  constructor(
    private readonly groupTopic: GroupTopic,
    private readonly request: ConsumeRequest,
    /** The group's offsets of the requests topic, when the request names one. */
    private readonly requestsGroup?: GroupTopic,
    /** Deletes the group once this member has left it (`ConsumeRequest.forgetOnClose`). */
    private readonly forget?: () => void,
  ) {
    const handler = request.requests;
    if (handler !== undefined && requestsGroup !== undefined) {
      this.requests = new MemoryRequests(requestsGroup, (p, messages) => handler.handle(p, messages));
      requestsGroup.requestReaders.add(this);
    }
  }

  take(max: number, perPartition?: (partition: number) => number): readonly InboundMessage[] {
    const out: InboundMessage[] = [];
    const owned = this.owned;
    const n = owned.length;
    // Start at a rotating partition so that one busy partition cannot starve the others.
    for (let k = 0; k < n && out.length < max; k++) {
      const o = owned[(this.cursor + k) % n]!;
      if (o.paused || o.revoked || !o.ready) continue;
      const log = this.groupTopic.log.partitions[o.partition]!;
      const room = Math.min(max - out.length, perPartition?.(o.partition) ?? Number.POSITIVE_INFINITY);
      if (!(room > 0)) continue;
      const end = Math.min(log.length, o.position + room);
      for (let i = o.position; i < end; i++) out.push(log[i]!);
      o.position = end;
    }
    this.cursor = n > 0 ? (this.cursor + 1) % n : 0;
    this.groupTopic.readCount += out.length;
    return out;
  }

  backlog(): number {
    let waiting = 0;
    for (const o of this.owned) waiting += this.groupTopic.log.endOffset(o.partition) - o.position;
    return waiting;
  }

  /** What is left to read: of the topic, and of the requests topic read beside it. */
  async lag(): Promise<number> {
    return this.backlog() + (this.requests?.waiting() ?? 0);
  }

  /** Per owned partition: its end less the group's committed offset. */
  async partitionLags(): Promise<readonly PartitionLag[]> {
    const { log, committed } = this.groupTopic;
    return this.owned.map((o) => ({
      partition: o.partition,
      lag: Math.max(0, log.endOffset(o.partition) - (committed[o.partition] ?? 0)),
    }));
  }

  assignments(): number {
    return this.assigns;
  }

  assigned(): readonly number[] {
    return this.owned.map((o) => o.partition);
  }

  pause(partition: number): void {
    const o = this.find(partition);
    if (o) o.paused = true;
  }

  resume(partition: number): void {
    const o = this.find(partition);
    if (o?.paused) {
      o.paused = false;
      this.request.onReadable();
    }
  }

  commit(partition: number, offset: number): void {
    if (this.find(partition)) this.groupTopic.commit(partition, offset);
  }

  async flush(): Promise<void> {
    // Commits are applied as they are made.
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.groupTopic.leave(this);
    this.requestsGroup?.requestReaders.delete(this);
    this.forget?.();
  }

  /** Called by the broker when a message was appended to a partition of the requests topic. */
  requestArrived(partition: number): void {
    if (!this.closed) this.requests?.arrived(partition);
  }

  /** Called by the broker when a message was appended to one of the topic's partitions. */
  notifyAppended(partition: number): void {
    const o = this.find(partition);
    if (o && !o.paused && !o.revoked && o.ready) this.request.onReadable();
  }

  /** @internal Rebalance, first half: the subscription settles what it owns, then lets go. */
  async revokeAll(): Promise<void> {
    if (this.owned.length === 0) return;
    const partitions = this.owned.map((o) => o.partition);
    for (const o of this.owned) o.revoked = true;
    await this.requests?.stop(); // the requests being handled finish while their shards are still here
    await this.request.onRevoke(partitions);
    this.owned = [];
  }

  /**
   * @internal Rebalance, second half: new partitions start at the group's committed offsets, handed out
   * once the request's `onAssign` settled (a rejection is the app's to report: they are handed out anyway).
   */
  assign(partitions: readonly number[]): void {
    if (this.closed) return;
    this.assigns++;
    const request = this.request;
    const gate = request.onAssign === undefined ? undefined : (p: readonly number[]) => request.onAssign!(p);
    const owned: Owned[] = partitions.map((p) => ({
      partition: p,
      position: this.groupTopic.committed[p] ?? 0,
      paused: false,
      revoked: false,
      ready: gate === undefined,
    }));
    this.owned = owned;
    this.cursor = 0;
    if (partitions.length === 0) return;
    if (gate === undefined) {
      this.requests?.open(partitions);
      return this.request.onReadable();
    }
    const open = (): void => {
      for (const o of owned) o.ready = true;
      if (this.closed || this.owned !== owned) return;
      this.requests?.open(partitions);
      this.request.onReadable();
    };
    gate(partitions).then(open, open);
  }

  private find(partition: number): Owned | undefined {
    for (const o of this.owned) if (o.partition === partition) return o;
    return undefined;
  }
}
