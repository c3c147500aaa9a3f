import type { TopicLog } from './topic-log.js';

/** What the group needs of a member. */
export interface GroupMember {
  /** Gives up every partition, after its subscription settled them. */
  revokeAll(): Promise<void>;
  assign(partitions: readonly number[]): void;
  notifyAppended(partition: number): void;
  close(): Promise<void>;
}

/**
 * The members of one consumer group reading one topic, and the group's committed offsets. Rebalances
 * are eager, as in Kafka's classic protocol: every member gives up everything (its subscription settles
 * and commits the revoked partitions first), then partitions are dealt out again, round-robin.
 */
export class GroupTopic {
  readonly members: GroupMember[] = [];
  readonly committed: number[];
  /** Per partition, how many times transactions opened it (see `MemoryTransactions`): the holder's epoch. */
  readonly epochs: number[];
  /** Messages handed to members, redeliveries included: lets tests see how far the group has read. */
  readCount = 0;
  /** Members that read this topic beside their own as a requests topic (see `ConsumeRequest.requests`). */
  readonly requestReaders = new Set<{ requestArrived(partition: number): void }>();
  private rebalancing: Promise<void> = Promise.resolve();

  constructor(
    readonly group: string,
    readonly log: TopicLog,
  ) {
    this.committed = new Array<number>(log.partitions.length).fill(0);
    this.epochs = new Array<number>(log.partitions.length).fill(0);
  }

  join(member: GroupMember): Promise<void> {
    this.members.push(member);
    return this.rebalance();
  }

  leave(member: GroupMember): Promise<void> {
    const i = this.members.indexOf(member);
    if (i >= 0) this.members.splice(i, 1);
    return this.rebalance(member);
  }

  commit(partition: number, offset: number): void {
    if (offset > (this.committed[partition] ?? 0)) this.committed[partition] = offset;
  }

  /** Serialised: one rebalance at a time, each revoking everything before dealing out anew. */
  private rebalance(leaving?: GroupMember): Promise<void> {
    this.rebalancing = this.rebalancing.then(async () => {
      const holders = leaving ? [...this.members, leaving] : this.members;
      await Promise.all(holders.map((m) => m.revokeAll()));
      const count = this.log.partitions.length;
      const shares: number[][] = this.members.map(() => []);
      for (let p = 0; p < count && shares.length > 0; p++) shares[p % shares.length]!.push(p);
      this.members.forEach((m, i) => m.assign(shares[i]!));
    });
    return this.rebalancing;
  }
}
