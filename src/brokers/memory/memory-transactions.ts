import { SluiceError } from '../../core/errors.js';
import type { InputTransactions, StagedMessage } from '../../core/ports.js';
import type { GroupTopic } from './group.js';

/**
 * The memory broker's transactions of one group over one topic: per partition, the epoch this holder opened
 * it with. A later `open` anywhere (another app on the same broker) takes a newer epoch, and a commit of an
 * older one is refused, as Kafka fences a transactional producer by its epoch. A commit is synchronous, so
 * nothing sees its messages without its offset.
 */
export class MemoryTransactions implements InputTransactions {
  private readonly held = new Map<number, number>();

  constructor(
    private readonly group: GroupTopic,
    /** Appends every message, or (one refused) none. */
    private readonly publishAll: (messages: readonly StagedMessage[]) => void,
  ) {}

  async open(partition: number): Promise<number> {
    const epoch = (this.group.epochs[partition] ?? 0) + 1;
    this.group.epochs[partition] = epoch;
    this.held.set(partition, epoch);
    return this.group.committed[partition] ?? 0;
  }

  async commit(partition: number, offset: number, messages: readonly StagedMessage[]): Promise<void> {
    const epoch = this.held.get(partition);
    if (epoch === undefined || epoch !== this.group.epochs[partition])
      throw new SluiceError(
        'TRANSACTION_FENCED',
        `MemoryBroker: partition ${partition} of ${this.group.log.name} (group ${this.group.group}) was opened by another holder`,
      );
    this.publishAll(messages);
    this.group.commit(partition, offset);
  }

  async release(partition: number): Promise<void> {
    this.held.delete(partition);
  }
}
