import { SluiceError } from '../../../core/errors.js';
import type { Alongside, Logger, ShardLog, StoreObserver } from '../../../core/ports.js';
import { checkRecord } from '../../../core/records.js';
import { RecordAssembler, changelogValues } from './changelog-records.js';
import { HEAD_KEY, SnapshotReader, snapshotMessages, type SnapshotHead } from './kafka-snapshots.js';
import { aborted, alongsideOf, alongsideRefusal } from './alongside.js';
import type { StoreClient, StoreMessage, StoreTransaction, StoreWriter } from './store-client.js';

/** What a {@link KafkaShardLog} is made with (by `kafkaStore`, which checked it). */
export interface KafkaShardLogSettings {
  /** The Kafka client the store has (kafkajs or @platformatic/kafka). */
  readonly client: StoreClient;
  readonly shard: number;
  /** The changelog topic: partition `shard` holds the shard's records. */
  readonly changelog: string;
  /** The compacted snapshots topic: partition `shard` holds the shard's snapshot. */
  readonly snapshots: string;
  /** The shard's transactional id: whoever opens the shard with it fences the one that had it. */
  readonly transactionalId: string;
  /** The largest batch of messages one request may carry (under the topics' `max.message.bytes`). */
  readonly maxMessageBytes: number;
  readonly log: Logger;
}

/** Room kept in each request for Kafka's own batch and record headers. */
const OVERHEAD_BYTES = 1024;
/** Room counted for each message's own header in a request. */
const MESSAGE_OVERHEAD_BYTES = 32;
/** Snapshot bytes per transaction at most: appends wait behind a snapshot's transaction no longer than this takes. */
const SNAPSHOT_BYTES_PER_TRANSACTION = 4 * 1024 * 1024;
/**
 * Appends one transaction carries at most. A paced subscriber keeps about two transactions' worth of a
 * partition's events under way (`PACE_INTAKE_PER_PARTITION`): while one commits, the next one's events are read
 * and applied, and the thread does not wait on a commit with nothing to do. A transaction that took every
 * append waiting took them all, and left the intake no room until it committed.
 */
export const APPENDS_PER_TRANSACTION = 2_000;

interface Pending {
  readonly lsn: number;
  readonly record: Uint8Array;
  /** Published in the record's transaction; dropped once refused. */
  alongside: Alongside | undefined;
  readonly resolve: (lsn: number) => void;
  readonly reject: (error: unknown) => void;
}

/** Messages for the snapshots partition that ride in a transaction of their own, beside appends. */
interface SnapshotWork {
  readonly messages: StoreMessage[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * One shard's log in Kafka, as Kafka Streams keeps a state store: the records in partition `shard` of the
 * changelog topic, the snapshot in the same partition of a compacted snapshots topic, written by one
 * transactional producer whose `transactionalId` names the shard, so that opening the shard fences the
 * process that had it before. Appends made in one turn of the event loop share one transaction (group
 * commit); an append resolves once its transaction is committed, and a record is read back only from
 * committed transactions (`read_committed`). A failed transaction is fatal, as a failed fsync is to the
 * file store: the log refuses every later append (`STORE_FENCED` when another owner fenced it,
 * `STORE_CORRUPT` otherwise), and only a reopen goes on.
 */
export class KafkaShardLog implements ShardLog {
  readonly shard: number;
  /** Transactions committed with appends in them since the log was made (bench/kafka-pace reports records per
   * transaction). */
  appendTransactions = 0;
  private producer: StoreWriter | undefined;
  private nextLsn = 1;
  private durable = 0;
  private pending: Pending[] = [];
  private snapshotWork: SnapshotWork[] = [];
  private flushing: Promise<void> | undefined;
  private failed: SluiceError | undefined;
  /** Told of each transaction of appends and each snapshot (metrics), when the store is observed. */
  observer: StoreObserver | undefined = undefined;
  /** Offsets just past a transaction's last record, by that record's LSN, oldest first: where deletes may cut. */
  private boundaries: { lsn: number; offset: number }[] = [];
  private head: SnapshotHead | undefined;
  private stale: string[] = [];
  private snapshotAtOpen: { lsn: number; state: Uint8Array } | undefined;
  /** The records read at open past the snapshot, until the first replay takes them. */
  private tail: { first: number; records: Buffer[] } | undefined;
  private snapshotting: Promise<void> = Promise.resolve();
  /** Appends to send one per transaction, after a transaction with outputs was refused: whose were, is found out. */
  private alone = 0;
  private readonly where: string;

  constructor(private readonly settings: KafkaShardLogSettings) {
    this.shard = settings.shard;
    this.where = `kafka store ${settings.changelog}[${settings.shard}]`;
  }

  /**
   * Takes the shard: starts its transactional producer (which fences the previous owner and ends its open
   * transaction), then reads the snapshot and the records after it.
   *
   * @throws {@link SluiceError} `STORE_CORRUPT` when the snapshot does not read, or records are missing.
   */
  async open(): Promise<void> {
    this.producer = await this.settings.client.writer(this.settings.transactionalId);
    const [snapshot] = await Promise.all([this.readSnapshotPartition(), this.readChangelog()]);
    this.head = snapshot.head;
    this.stale = snapshot.stale;
    this.snapshotAtOpen = snapshot.snapshot;
    const snapLsn = snapshot.head?.lsn ?? 0;
    const tail = this.tail!;
    const last = tail.first + tail.records.length - 1;
    if (tail.records.length > 0 && tail.first > snapLsn + 1)
      throw new SluiceError(
        'STORE_CORRUPT',
        `${this.where}: records ${snapLsn + 1} to ${tail.first - 1} are missing (${snapLsn > 0 ? `the snapshot ends at LSN ${snapLsn}` : 'there is no snapshot'}, the records start at LSN ${tail.first})`,
      );
    if (tail.first <= snapLsn) tail.records.splice(0, snapLsn + 1 - tail.first);
    tail.first = snapLsn + 1;
    this.durable = Math.max(last, snapLsn);
    this.nextLsn = this.durable + 1;
  }

  durableLsn(): number {
    return this.durable;
  }

  assignedLsn(): number {
    return this.nextLsn - 1;
  }

  append(record: Uint8Array, alongside?: Alongside): Promise<number> {
    if (this.failed !== undefined) throw this.failed;
    if (this.producer === undefined)
      throw new SluiceError('APP_STATE', `${this.where}: appends are taken once the store is open`);
    checkRecord(record);
    const lsn = this.nextLsn++;
    return new Promise((resolve, reject) => {
      this.pending.push({ lsn, record, alongside, resolve, reject });
      this.startFlush();
    });
  }

  async replay(fromLsn: number, visit: (lsn: number, record: Uint8Array) => void): Promise<void> {
    const target = this.durable;
    let from = Math.max(1, fromLsn);
    const tail = this.tail;
    this.tail = undefined; // read once, at recovery; not kept
    if (tail && from >= tail.first) {
      for (let lsn = from; lsn < tail.first + tail.records.length; lsn++) visit(lsn, tail.records[lsn - tail.first]!);
      from = Math.max(from, tail.first + tail.records.length);
    }
    if (from > target) return;
    const assembler = new RecordAssembler(this.where, (lsn, record) => {
      if (lsn >= from && lsn <= target) visit(lsn, record);
    });
    await this.settings.client.read(
      this.settings.changelog,
      this.shard,
      () => assembler.whole && assembler.lastLsn >= target,
      (m) => assembler.read(m.value, m.offset),
    );
  }

  /**
   * Writes the snapshot: its chunks in transactions of their own (between appends' transactions), then its
   * head; then tombstones the chunks of the snapshot before, and deletes the changelog records it covers.
   */
  writeSnapshot(lsn: number, state: Uint8Array): Promise<void> {
    const timed = async (): Promise<void> => {
      const startedAt = performance.now();
      await this.snapshotNow(lsn, state);
      this.observer?.snapshotWritten(this.shard, (performance.now() - startedAt) / 1000);
    };
    const run = this.snapshotting.then(timed);
    this.snapshotting = run.catch(() => undefined);
    return run;
  }

  private async snapshotNow(lsn: number, state: Uint8Array): Promise<void> {
    if (!(lsn <= this.durable))
      throw new RangeError(`ShardLog.writeSnapshot: LSN ${lsn} is not durable yet (durable: ${this.durable})`);
    if (this.failed !== undefined) throw this.failed;
    const { head, chunks, headValue } = snapshotMessages(lsn, state, this.settings.maxMessageBytes - OVERHEAD_BYTES);
    const writes: Promise<void>[] = [];
    for (let i = 0; i < chunks.length;) {
      const piece: SnapshotWork['messages'] = [];
      for (let bytes = 0; i < chunks.length && (piece.length === 0 || bytes < SNAPSHOT_BYTES_PER_TRANSACTION); i++) {
        piece.push(chunks[i]!);
        bytes += chunks[i]!.value.length;
      }
      writes.push(this.writeSnapshotMessages(piece));
    }
    await Promise.all(writes);
    await this.writeSnapshotMessages([{ key: HEAD_KEY, value: headValue }]);
    const old = this.head;
    this.head = head;
    this.snapshotAtOpen = undefined;
    const dead = [
      ...this.stale,
      ...(old ? Array.from({ length: old.chunks }, (_, i) => `chunk/${old.lsn}/${old.id}/${i}`) : []),
    ];
    this.stale = [];
    if (dead.length > 0) await this.writeSnapshotMessages(dead.map((key) => ({ key, value: null })));
    await this.deleteCovered(lsn);
  }

  async readSnapshot(): Promise<{ lsn: number; state: Uint8Array } | undefined> {
    const read = this.snapshotAtOpen ?? (await this.readSnapshotPartition()).snapshot;
    this.snapshotAtOpen = undefined; // read once at open; not kept
    return read;
  }

  /** Waits for the appends and snapshot under way, then lets the producer go (the shard stays fenced-free). */
  async close(): Promise<void> {
    await this.snapshotting;
    while (this.flushing) await this.flushing;
    await this.producer?.close();
    this.producer = undefined;
  }

  private writeSnapshotMessages(messages: SnapshotWork['messages']): Promise<void> {
    return new Promise((resolve, reject) => {
      this.snapshotWork.push({ messages, resolve, reject });
      this.startFlush();
    });
  }

  /** Starts a flush a turn later, so that the appends made in this turn share its transaction. */
  private startFlush(): void {
    if (this.flushing || this.failed) return;
    this.flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.flush())
      .finally(() => {
        this.flushing = undefined;
        // Appends made while the last transaction's appends heard back, after the loop looked: flush them too.
        if (this.pending.length > 0 || this.snapshotWork.length > 0) this.startFlush();
      });
  }

  /**
   * Transactions one after another, each with the appends waiting (`APPENDS_PER_TRANSACTION` at most) and at
   * most one piece of a snapshot.
   */
  private async flush(): Promise<void> {
    while ((this.pending.length > 0 || this.snapshotWork.length > 0) && this.failed === undefined) {
      const batch = this.pending.splice(0, this.alone > 0 ? 1 : APPENDS_PER_TRANSACTION);
      if (this.alone > 0) this.alone--;
      const alongside = alongsideOf(batch);
      const work = this.snapshotWork.shift();
      let boundary: { lsn: number; offset: number } | undefined;
      let txn: StoreTransaction | undefined;
      try {
        const startedAt = this.observer === undefined ? 0 : performance.now();
        txn = await this.producer!.transaction();
        if (batch.length > 0) boundary = await this.sendRecords(txn, batch);
        if (work) await this.sendSlices(txn, this.settings.snapshots, work.messages);
        if (alongside.length > 0) await txn.sendAlongside(alongside);
        await txn.commit();
        if (batch.length > 0) this.observer?.flushed(this.shard, batch.length, (performance.now() - startedAt) / 1000);
      } catch (error) {
        if (await this.refused(error, batch, work, txn)) continue;
        this.fail(error, batch, work, txn);
        return;
      }
      if (boundary) this.boundaries.push(boundary);
      if (batch.length > 0) {
        this.durable = batch[batch.length - 1]!.lsn;
        this.appendTransactions++;
      }
      for (const p of batch) p.resolve(p.lsn);
      work?.resolve();
    }
  }

  /**
   * A transaction with outputs failed: if they were refused for good and it aborted, its appends go again, one
   * per transaction until the refused outputs are found (refused, and dropped: their record is made durable
   * without them). False for any other failure, which is fatal.
   */
  private async refused(
    error: unknown,
    batch: Pending[],
    work?: SnapshotWork,
    txn?: StoreTransaction,
  ): Promise<boolean> {
    const refusal = alongsideRefusal(this.settings.client, alongsideOf(batch), error);
    if (refusal === undefined || !(await aborted(txn))) return false;
    if (batch.length === 1) {
      this.settings.log.warn('kafka store: publishes refused; the record goes without them', { lsn: batch[0]!.lsn });
      batch[0]!.alongside!.refused(refusal);
      batch[0]!.alongside = undefined;
      this.alone++;
    } else this.alone = batch.length;
    this.pending.unshift(...batch);
    if (work) this.snapshotWork.unshift(work);
    return true;
  }

  /** Sends a batch's records (packed, see `changelogValues`); returns the offset just past the last one. */
  private async sendRecords(txn: StoreTransaction, batch: Pending[]): Promise<{ lsn: number; offset: number }> {
    const room = this.settings.maxMessageBytes - OVERHEAD_BYTES - MESSAGE_OVERHEAD_BYTES;
    const messages = changelogValues(batch, room).map((value) => ({ key: null, value }));
    const next = await this.sendSlices(txn, this.settings.changelog, messages);
    return { lsn: batch[batch.length - 1]!.lsn, offset: next };
  }

  /**
   * Sends `messages` to the shard's partition of `topic` in requests of at most `maxMessageBytes` (Kafka's
   * limit is on a batch, not a message), one after another; returns the offset just past the last.
   */
  private async sendSlices(txn: StoreTransaction, topic: string, messages: readonly StoreMessage[]): Promise<number> {
    const limit = this.settings.maxMessageBytes - OVERHEAD_BYTES;
    let next = 0;
    for (let i = 0; i < messages.length;) {
      const slice: StoreMessage[] = [];
      let bytes = 0;
      for (; i < messages.length; i++) {
        const m = messages[i]!;
        const size = (m.value?.length ?? 0) + (m.key?.length ?? 0) + MESSAGE_OVERHEAD_BYTES;
        if (slice.length > 0 && bytes + size > limit) break;
        slice.push(m);
        bytes += size;
      }
      next = (await txn.send(topic, this.shard, slice)) + slice.length;
    }
    return next;
  }

  /** Deletes the changelog records the snapshot of `lsn` covers, up to the last transaction it covers whole. */
  private async deleteCovered(lsn: number): Promise<void> {
    let cut: { lsn: number; offset: number } | undefined;
    while (this.boundaries.length > 0 && this.boundaries[0]!.lsn <= lsn) cut = this.boundaries.shift();
    if (!cut) return;
    await this.settings.client.deleteRecords(this.settings.changelog, this.shard, cut.offset);
  }

  private fail(
    error: unknown,
    batch: Pending[],
    work: SnapshotWork | undefined,
    txn: StoreTransaction | undefined,
  ): void {
    const fenced = this.settings.client.isFenced(error);
    this.failed = fenced
      ? new SluiceError(
          'STORE_FENCED',
          `${this.where}: another owner opened the shard and fenced this one; the log refuses further appends`,
          { cause: error },
        )
      : new SluiceError(
          'STORE_CORRUPT',
          `${this.where}: a transaction failed; the log refuses further appends (reopen to recover)`,
          { cause: error },
        );
    if (!fenced) void txn?.abort().catch(() => undefined); // best effort: the next owner's open aborts it anyway
    for (const p of [...batch, ...this.pending.splice(0)]) p.reject(this.failed);
    for (const w of [...(work ? [work] : []), ...this.snapshotWork.splice(0)]) w.reject(this.failed);
  }

  private async readSnapshotPartition(): Promise<ReturnType<SnapshotReader['result']>> {
    const where = `kafka store ${this.settings.snapshots}[${this.shard}]`;
    const reader = new SnapshotReader(where);
    await this.settings.client.read(this.settings.snapshots, this.shard, 'end', (m) => reader.visit(m));
    return reader.result();
  }

  /** Reads every committed record into `tail`, and notes where transactions may have ended. */
  private async readChangelog(): Promise<void> {
    const records: Buffer[] = [];
    let first = 0;
    const assembler = new RecordAssembler(this.where, (lsn, record) => {
      if (records.length === 0) first = lsn;
      records.push(record);
    });
    let lastOffset = -1;
    let cutAt = 0;
    await this.settings.client.read(this.settings.changelog, this.shard, 'end', (m) => {
      assembler.read(m.value, m.offset);
      lastOffset = Number(m.offset);
      if (assembler.whole && assembler.lastLsn >= cutAt + 1024) {
        cutAt = assembler.lastLsn;
        this.boundaries.push({ lsn: cutAt, offset: lastOffset + 1 });
      }
    });
    if (!assembler.whole)
      throw new SluiceError(
        'STORE_CORRUPT',
        `${this.where}: the last record, LSN ${assembler.lastLsn + 1}, is cut short`,
      );
    if (records.length > 0) this.boundaries.push({ lsn: assembler.lastLsn, offset: lastOffset + 1 });
    this.tail = { first: records.length > 0 ? first : 1, records };
  }
}
