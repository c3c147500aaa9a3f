import { within } from '../core/deadline.js';
import { SluiceError } from '../core/errors.js';
import type { InboundMessage } from '../core/message.js';
import type { Clock, InputTransactions, Logger, StagedMessage } from '../core/ports.js';

/** How long a partition waits before it tries a commit that failed again. */
const RETRY_MS = 1_000;

/** What a finished delivery publishes, held until the watermark passes its offset. */
interface Held {
  readonly message: InboundMessage;
  readonly messages: readonly StagedMessage[];
}

/** One owned partition's transactions: where its reading resumes, what waits, what is committed. */
class PartitionTransactions {
  /** Finished deliveries with publishes, not committed yet (in the order they finished). */
  held: Held[] = [];
  /** The watermark to commit up to. */
  target: number;
  /** The offset committed last, by this member or (at `open`) the one before. */
  committed: number;
  /** The commits under way, while there is one. */
  running: Promise<void> | undefined = undefined;
  /** Another holder opened the partition: nothing more is committed here. */
  fenced = false;
  /** Let go: nothing more is committed here. */
  released = false;

  constructor(
    /** Deliveries below it were committed by an earlier holder: skipped. */
    readonly floor: number,
  ) {
    this.target = floor;
    this.committed = floor;
  }
}

/** What a delivery whose publish the broker refused for good becomes: dead-lettered (at least once). */
export type RefusedOutput = (message: InboundMessage, reason: string) => Promise<void>;

/**
 * The commits of an `exactlyOnce` subscription: per input partition, what its finished deliveries published
 * is held until the watermark passes them, then published with the watermark in one transaction (see
 * {@link InputTransactions}). One transaction of a partition at a time: what finishes while one is under way
 * goes in the next, so the transactions grow with the load. A partition opened here fences its earlier holder
 * first; what that holder committed is not handed out again.
 */
export class TransactionCommits {
  private readonly partitions = new Map<number, PartitionTransactions>();

  constructor(
    private readonly tx: InputTransactions,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly refused: RefusedOutput,
    /** Called when a partition's commits ended: `app.idle()` looks again. */
    private readonly progress: () => void,
  ) {}

  /** Whether a commit is under way or due: what finished is not visible yet. */
  busy(): boolean {
    for (const part of this.partitions.values()) if (part.running !== undefined) return true;
    return false;
  }

  /** Takes the partitions given to this member: each fenced, and where its reading resumes known. */
  async open(partitions: readonly number[]): Promise<void> {
    await Promise.all(
      partitions.map(async (p) => {
        const floor = await this.tx.open(p);
        this.partitions.set(p, new PartitionTransactions(floor));
      }),
    );
  }

  /**
   * Whether a delivery is to be handled here: its partition was opened, and the delivery is not below where
   * it resumed (an earlier holder committed it; a reader whose position was fetched before the fence hands
   * it out again).
   */
  admits(m: InboundMessage): boolean {
    const part = this.partitions.get(m.partition);
    return part !== undefined && !part.fenced && m.offset >= part.floor;
  }

  /** A delivery finished, having published `messages`: they wait for the watermark to pass it. */
  hold(message: InboundMessage, messages: readonly StagedMessage[] | undefined): void {
    if (messages === undefined || messages.length === 0) return;
    this.partitions.get(message.partition)?.held.push({ message, messages });
  }

  /** Everything below `offset` of `partition` finished: commits it, with what it published, soon. */
  commit(partition: number, offset: number): void {
    const part = this.partitions.get(partition);
    if (part === undefined || part.fenced || part.released || offset <= part.target) return;
    part.target = offset;
    part.running ??= this.run(partition, part);
  }

  /**
   * Commits what finished below `offsets` (partition → watermark), then lets those partitions go: waiting for
   * their commits until `deadline` fires, past which what was not committed is handled again by the next holder.
   */
  async release(
    partitions: readonly number[],
    offsets: ReadonlyMap<number, number>,
    deadline: Promise<void>,
  ): Promise<void> {
    for (const [p, offset] of offsets) this.commit(p, offset);
    await Promise.all(
      partitions.map(async (p) => {
        const part = this.partitions.get(p);
        if (part === undefined) return;
        if (part.running !== undefined && !(await within(part.running, deadline)))
          this.log.warn('exactlyOnce: a commit did not end in time; the next holder handles it again', {
            partition: p,
          });
        part.released = true;
        if (this.partitions.get(p) === part) this.partitions.delete(p);
        await this.tx.release(p);
      }),
    );
  }

  /** Every partition held: what a stop releases. */
  held(): number[] {
    return [...this.partitions.keys()];
  }

  private async run(partition: number, part: PartitionTransactions): Promise<void> {
    await Promise.resolve(); // `running` is set before this goes on
    try {
      while (part.target > part.committed && !part.fenced && !part.released) {
        try {
          await this.once(partition, part);
        } catch (error) {
          this.failed(partition, part, error);
          if (!part.fenced) await this.pause();
        }
      }
    } finally {
      part.running = undefined;
      this.progress();
    }
  }

  /** One transaction: what is held below the target, and the target. */
  private async once(partition: number, part: PartitionTransactions): Promise<void> {
    const to = part.target;
    const taken = part.held.filter((h) => h.message.offset < to).sort((a, b) => a.message.offset - b.message.offset);
    try {
      await this.tx.commit(
        partition,
        to,
        taken.flatMap((h) => h.messages),
      );
    } catch (error) {
      if (!(error instanceof SluiceError && error.code === 'PUBLISH_REFUSED')) throw error;
      await this.oneByOne(partition, part, taken);
      await this.tx.commit(partition, to, []);
    }
    this.committed(part, to);
  }

  /** A commit failed: fenced (the partition is left to its new holder), or tried again after a pause. */
  private failed(partition: number, part: PartitionTransactions, error: unknown): void {
    if (error instanceof SluiceError && error.code === 'TRANSACTION_FENCED') {
      part.fenced = true;
      part.held = [];
      this.log.warn('exactlyOnce: the partition was opened elsewhere; what was not committed here is left to it', {
        partition,
      });
    } else this.log.error('exactlyOnce: a commit failed; trying again', { partition, offset: part.target, error });
  }

  private pause(): Promise<void> {
    return new Promise<void>((resolve) => this.clock.setTimer(RETRY_MS, resolve, { keepAlive: true }));
  }

  /**
   * The broker refused a publish of a transaction for good: each delivery is committed in a transaction of its
   * own, and one whose publishes are refused is dead-lettered, then committed without them.
   */
  private async oneByOne(partition: number, part: PartitionTransactions, taken: readonly Held[]): Promise<void> {
    for (const h of taken) {
      const next = h.message.offset + 1;
      try {
        await this.tx.commit(partition, next, h.messages);
      } catch (error) {
        if (!(error instanceof SluiceError && error.code === 'PUBLISH_REFUSED')) throw error;
        await this.refused(h.message, `${error.code}: ${error.message}`);
        await this.tx.commit(partition, next, []);
      }
      this.committed(part, next);
    }
  }

  private committed(part: PartitionTransactions, offset: number): void {
    part.committed = Math.max(part.committed, offset);
    part.held = part.held.filter((h) => h.message.offset >= offset);
  }
}
