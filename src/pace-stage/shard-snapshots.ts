import type { ShardLog } from '../core/ports.js';
import type { ShardCore } from '../shard/shard-core.js';
import { writeSnapshotText } from '../shard/snapshot-text.js';

/** Keys serialised per turn of the event loop while a snapshot is written. */
const SNAPSHOT_CHUNK = 1_000;

/**
 * When a shard host snapshots its core, and the snapshot under way: a whole-shard snapshot costs time in
 * proportion to the keys held and their states' size, so it is taken after `every` records or twice as many
 * records as keys, whichever is more, and once the records since the last one take as many bytes as it did:
 * its cost spread over the records it covers, even when one busy key's state is large (100,000 remembered
 * event IDs).
 */
export class ShardSnapshots<S, O> {
  /** Bytes of records appended since open. */
  appendedBytes = 0;
  /** The LSN of the last snapshot (read at open, or written since). */
  lsn = 0;
  /** `appendedBytes` as of the last snapshot, and that snapshot's size. */
  private atBytes = 0;
  private bytes = 0;
  private writing = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly core: ShardCore<S, O>,
    private readonly log: ShardLog,
    private readonly every = 10_000,
  ) {}

  /** Whether the records since the last snapshot call for another (see the class). */
  due(): boolean {
    const since = this.core.appliedLsn - this.lsn;
    return since >= this.every && since >= 2 * this.core.keyCount && this.appendedBytes - this.atBytes >= this.bytes;
  }

  /**
   * Writes a snapshot of the whole shard if everything applied is durable and handed out (returns false
   * otherwise, or while one is being written); the log then deletes the segments it covers.
   */
  async take(): Promise<boolean> {
    const log = this.log;
    if (this.writing || this.core.appliedLsn !== log.durableLsn() || this.core.waiting > 0) return false;
    this.writing = true;
    try {
      const atBytes = this.appendedBytes;
      const { lsn, text: state } = await writeSnapshotText(this.core, SNAPSHOT_CHUNK);
      await log.writeSnapshot(lsn, state);
      this.lsn = lsn;
      this.atBytes = atBytes;
      this.bytes = state.length;
      return true;
    } finally {
      this.writing = false;
    }
  }

  /** Takes a snapshot in the background, unless one is; a failure is told to `failed` (only a lost shortcut). */
  start(failed: ((error: unknown) => void) | undefined): void {
    // One at a time: a second would return at once and, kept in place of the first, let the host's `close` (and
    // the store's close, and its lock) go while the first still writes and deletes files.
    if (this.running !== undefined) return;
    const running: Promise<void> = this.take()
      .then(
        () => undefined,
        (error: unknown) => failed?.(error),
      )
      .finally(() => {
        if (this.running === running) this.running = undefined;
      });
    this.running = running;
  }

  /** Resolves once a snapshot under way (if any) is written. */
  async settled(): Promise<void> {
    await this.running;
  }
}
