import { SluiceError, reasonOf, show } from '../core/errors.js';
import type { Alongside, ShardLog, StagedMessage, Store, StoreOwner } from '../core/ports.js';
import { checkRecord } from '../core/records.js';

/**
 * A store in memory, for tests. Appends become durable together on the next turn of the event loop (a
 * group commit); `crash()` returns a new store holding only what was durable, as a process restarted
 * after a crash would find it. Reads take turns of the event loop, as a file's do: opening, reading a
 * snapshot, and replay (a turn per 1,000 records), so that what runs beside a restart runs in a test too.
 *
 * @category Store
 */
export interface MemoryStore extends Store {
  /**
   * A new store holding only what was durable, as a process restarted after a crash would find it; this
   * one loses its appends not yet durable. Give it to a fresh app to test what survives a crash.
   *
   * @example
   * ```ts
   * const store = memoryStore();
   * const first = new App({ name: 't', clock, store }).withBroker(new MemoryBroker(), (b) => b.include(reindex));
   * await first.start();
   * await first.send('reindex', { key: 'row-7', event: { rowId: 'row-7' } });
   * // The process "dies": the first app is abandoned, never stopped.
   * const second = new App({ name: 't', clock, store: store.crash() }).withBroker(new MemoryBroker(), (b) =>
   * b.include(reindex));
   * await second.start(); // the acknowledged start is there: its window runs when the clock reaches it
   * ```
   */
  crash(): MemoryStore;
}

/**
 * Settings of {@link memoryStore}.
 *
 * @category Store
 */
export interface MemoryStoreOptions {
  /** Shard logs. @default 4 */
  shards?: number;
  /**
   * Seeds how many turns of the event loop each read takes (1 to 4; the same seed, the same turns): a
   * test can try a restart under several interleavings. @default `undefined`: every read takes one turn
   */
  ioSeed?: number;
  /**
   * `partition`: the store stands in for a Kafka store in tests, shared by several apps on one memory
   * broker — shard p goes with partition p of the paced subscriber's topic (see `Store.ownership`), and
   * opening a shard fences its previous owner's log (`STORE_FENCED`); `app.send` is routed to the owner of
   * a key's partition through topics `<app>.<subscriber>.requests` and `.replies` of the app's broker (see
   * `Store.routes`), which the memory broker creates on first use. @default 'all'
   */
  ownership?: 'all' | 'partition';
  /**
   * A broker that takes a record's messages when the record becomes durable (`MemoryBroker`'s `publishAll`:
   * all or none): the store then publishes (see `Store.publishes`), as a Kafka store does in its
   * transaction, so that a paced subscriber marked `exactlyOnce` runs on the memory broker.
   */
  publishesTo?: MessageSink;
}

/** Where a memory store publishes a record's messages: all of them, or (throwing) none. */
export interface MessageSink {
  /** Publishes every message, in order, or throws and publishes none. */
  publishAll(messages: readonly StagedMessage[]): void;
}

/**
 * A store in memory, for tests: deterministic with a {@link ManualClock}, and {@link MemoryStore.crash}
 * gives the store a restarted process would find.
 *
 * @throws {@link SluiceError} `CONFIG_INVALID` when `shards` is not a positive integer or `ioSeed` not an
 *   integer.
 *
 * @category Store
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const shards = options.shards ?? 4;
  if (!Number.isInteger(shards) || shards < 1)
    throw new SluiceError('CONFIG_INVALID', `memoryStore: shards must be a positive integer, got ${show(shards)}`);
  const seed = options.ioSeed;
  if (seed !== undefined && !Number.isInteger(seed))
    throw new SluiceError('CONFIG_INVALID', `memoryStore: ioSeed must be an integer, got ${show(seed)}`);
  const ownership = options.ownership ?? 'all';
  if (ownership !== 'all' && ownership !== 'partition')
    throw new SluiceError(
      'CONFIG_INVALID',
      `memoryStore: ownership must be 'all' or 'partition', got ${show(options.ownership)}`,
    );
  return new InMemoryStore(
    Array.from({ length: shards }, () => []),
    [],
    seed === undefined ? () => 1 : turnsOf(seed),
    ownership,
    options.publishesTo,
  );
}

/** Turns a read takes, 1 to 4, from a seed (mulberry32). */
function turnsOf(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return 1 + Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 4);
  };
}

/** Waits the turns of the event loop that a read takes. */
async function read(turns: () => number): Promise<void> {
  for (let n = turns(); n > 0; n--) await new Promise<void>((resolve) => setImmediate(resolve));
}

class InMemoryStore implements MemoryStore {
  readonly shards: number;
  private readonly logs: MemoryShardLog[];

  constructor(
    durable: Uint8Array[][],
    snapshots: ({ lsn: number; state: Uint8Array } | undefined)[],
    private readonly turns: () => number,
    readonly ownership: 'all' | 'partition',
    private readonly sink: MessageSink | undefined,
  ) {
    this.shards = durable.length;
    this.publishes = sink !== undefined;
    this.logs = durable.map((records, i) => new MemoryShardLog(i, records, snapshots[i], turns, sink));
  }

  readonly publishes: boolean;

  /** A new log of the shard's durable records: the one it had is fenced, its pending appends refused. */
  async openShard(shard: number): Promise<ShardLog> {
    const old = this.log(shard) as MemoryShardLog;
    old.fence();
    const log = new MemoryShardLog(shard, old.durableRecords(), old.snapshotForCrash(), this.turns, this.sink);
    this.logs[shard] = log;
    await read(this.turns);
    return log;
  }

  async closeShard(shard: number): Promise<void> {
    this.log(shard); // a RangeError for a shard it does not have
    await read(this.turns);
  }

  /** Under ownership `partition`, named once opened after its owner: `<app>.<subscriber>.requests`/`.replies`. */
  routes: { readonly requests: string; readonly replies: string } | undefined;

  async open(owner?: StoreOwner): Promise<void> {
    if (this.ownership === 'partition' && owner !== undefined) {
      const base = `${owner.app}.${owner.subscribers.length === 1 ? owner.subscribers[0] : 'pace'}`;
      this.routes = { requests: `${base}.requests`, replies: `${base}.replies` };
    }
    await read(this.turns);
  }
  async close(): Promise<void> {}

  log(shard: number): ShardLog {
    const log = this.logs[shard];
    if (!log) throw new RangeError(`memoryStore: no shard ${shard} (it has ${this.shards})`);
    return log;
  }

  crash(): MemoryStore {
    for (const l of this.logs) l.lost = true;
    return new InMemoryStore(
      this.logs.map((l) => l.durableRecords()),
      this.logs.map((l) => l.snapshotForCrash()),
      this.turns,
      this.ownership,
      this.sink,
    );
  }
}

/**
 * Records in blocks of 1 MiB (a record never spans two), found by block and offset in typed arrays: no
 * object per record, so a test store of millions of records does not load the garbage collector, and no
 * block is ever copied to grow, so a large store does not stall the event loop while it grows.
 */
class RecordArena {
  private static readonly BLOCK = 1 << 20;
  private readonly blocks: Buffer[] = [];
  private blockUsed = 0;
  private block = new Uint32Array(1024);
  private offset = new Uint32Array(1024);
  private size = new Uint32Array(1024);
  length = 0;

  push(record: Uint8Array): void {
    if (this.blocks.length === 0 || this.blockUsed + record.length > this.blocks.at(-1)!.length) {
      this.blocks.push(Buffer.allocUnsafe(Math.max(RecordArena.BLOCK, record.length)));
      this.blockUsed = 0;
    }
    if (this.length === this.block.length) {
      const grow = (a: Uint32Array<ArrayBuffer>): Uint32Array<ArrayBuffer> => {
        const b = new Uint32Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.block = grow(this.block);
      this.offset = grow(this.offset);
      this.size = grow(this.size);
    }
    this.blocks.at(-1)!.set(record, this.blockUsed);
    this.block[this.length] = this.blocks.length - 1;
    this.offset[this.length] = this.blockUsed;
    this.size[this.length++] = record.length;
    this.blockUsed += record.length;
  }

  /** Forgets the records from `length` on. */
  truncate(length: number): void {
    this.length = Math.min(this.length, length);
  }

  /** The record at `index` (0-based): a view of its bytes. */
  at(index: number): Buffer {
    const start = this.offset[index]!;
    return this.blocks[this.block[index]!]!.subarray(start, start + this.size[index]!);
  }
}

class MemoryShardLog implements ShardLog {
  private readonly records = new RecordArena();
  private durable: number;
  private scheduled = false;
  private waiting: {
    lsn: number;
    alongside: Alongside | undefined;
    resolve: (lsn: number) => void;
    reject: (error: unknown) => void;
  }[] = [];
  /** Set when another owner opened the shard: appends pending and later are refused. */
  private fenced: SluiceError | undefined;
  /** Set by a crash: this instance is gone, its pending appends never resolve. */
  lost = false;

  constructor(
    readonly shard: number,
    durable: Uint8Array[],
    snapshot: { lsn: number; state: Uint8Array } | undefined,
    private readonly turns: () => number,
    private readonly sink: MessageSink | undefined,
  ) {
    for (const r of durable) this.records.push(r);
    this.durable = durable.length;
    this.snapshot = snapshot;
  }

  append(record: Uint8Array, alongside?: Alongside): Promise<number> {
    // Refused as the file and Kafka logs refuse an append once they failed: by a throw, before an LSN is
    // given (a rejected promise would leave the caller's record under the last LSN, and unheard).
    if (this.fenced) throw this.fenced;
    checkRecord(record);
    this.records.push(record);
    if (this.lost) return new Promise(() => {}); // its LSN given, as the caller reads it; never durable
    const lsn = this.records.length;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.commit());
    }
    return new Promise((resolve, reject) => this.waiting.push({ lsn, alongside, resolve, reject }));
  }

  /** Another owner took the shard: what is pending is refused, and so is every later append. */
  fence(): void {
    this.fenced ??= new SluiceError(
      'STORE_FENCED',
      `memoryStore: shard ${this.shard} was opened by another owner; this log takes no more appends`,
    );
    for (const w of this.waiting.splice(0)) w.reject(this.fenced);
    this.records.truncate(this.durable);
  }

  durableLsn(): number {
    return this.durable;
  }

  assignedLsn(): number {
    return this.records.length;
  }

  private snapshot: { lsn: number; state: Uint8Array } | undefined;

  async writeSnapshot(lsn: number, state: Uint8Array): Promise<void> {
    if (!(lsn <= this.durable))
      throw new RangeError(`ShardLog.writeSnapshot: LSN ${lsn} is not durable yet (durable: ${this.durable})`);
    await new Promise<void>((resolve) => setImmediate(resolve)); // not in the caller's turn, as a file's write is not
    this.snapshot = { lsn, state: Buffer.from(state) }; // a copy (memcpy), as a file would be
  }

  async readSnapshot(): Promise<{ lsn: number; state: Uint8Array } | undefined> {
    await read(this.turns);
    return this.snapshot;
  }

  snapshotForCrash(): { lsn: number; state: Uint8Array } | undefined {
    return this.snapshot;
  }

  /** Reads 1,000 records a time, each read taking its turns of the event loop. */
  async replay(fromLsn: number, visit: (lsn: number, record: Uint8Array) => void): Promise<void> {
    let lsn = Math.max(1, fromLsn);
    do {
      await read(this.turns);
      for (const end = Math.min(this.durable, lsn + 999); lsn <= end; lsn++) visit(lsn, this.records.at(lsn - 1));
    } while (lsn <= this.durable);
  }

  durableRecords(): Uint8Array[] {
    return Array.from({ length: this.durable }, (_, i) => Buffer.from(this.records.at(i)));
  }

  private commit(): void {
    this.scheduled = false;
    if (this.lost || this.fenced) return;
    this.durable = this.records.length;
    for (const w of this.waiting.splice(0)) {
      if (w.alongside !== undefined && w.alongside.messages.length > 0) this.publish(w.alongside);
      w.resolve(w.lsn);
    }
  }

  /** A durable record's messages, published with it; refused whole when the broker refuses one. */
  private publish({ messages, refused }: Alongside): void {
    if (this.sink === undefined) throw new SluiceError('APP_STATE', 'memoryStore: made without publishesTo');
    try {
      this.sink.publishAll(messages);
    } catch (error) {
      refused(
        error instanceof SluiceError
          ? error
          : new SluiceError('PUBLISH_REFUSED', `memoryStore: publishes refused: ${reasonOf(error)}`, { cause: error }),
      );
    }
  }
}
