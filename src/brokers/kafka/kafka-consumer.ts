import { PartitionAssigners, type Admin, type Consumer as KafkajsConsumer, type EachBatchPayload, type Kafka } from 'kafkajs';
import { subscriptionAwareAssigner } from './assigner.js';
import type { InboundMessage } from '../../core/message.js';
import type { ConsumeRequest, Consumer, Logger } from '../../core/ports.js';
import { PartitionEnds } from './partition-ends.js';
import { PartitionFeed } from './partition-feed.js';

/** Consumer settings of a {@link KafkaBroker}; every field has a default. */
export interface KafkaConsumerSettings {
  /** @default 30_000 */
  sessionTimeoutMs: number;
  /**
   * How long a rebalance waits for members. A member that sees a rebalance waits for its revoked partitions'
   * in-flight work (heartbeating) for at most this less one heartbeat interval, and less than the app's
   * `shutdownTimeoutMs` when that is shorter. @default 60_000
   */
  rebalanceTimeoutMs: number;
  /** @default 3_000 */
  heartbeatIntervalMs: number;
  /** How long a fetch waits for data. @default 1_000 */
  maxWaitTimeMs: number;
  /** How often finished offsets are committed while batches run. @default 1_000 */
  commitIntervalMs: number;
  /** Where a group without committed offsets starts. @default true (the earliest offset) */
  fromBeginning: boolean;
  /** How old metadata may grow before it is read again: see `KafkaBrokerOptions.metadataMaxAgeMs`. @default 30_000 */
  metadataMaxAgeMs: number;
}

/** How long after a crash kafkajs does not recover from the consumer joins its group again. */
const RESTART_MS = 1_000;
/** While a batch is held only for the work in flight, how often the partition's end is asked for. */
const POLL_MS = 100;

const REBALANCE_ERRORS = new Set(['REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID']);
const isRebalance = (e: unknown): boolean => REBALANCE_ERRORS.has((e as { type?: string })?.type ?? '');

/**
 * One member of a Kafka consumer group reading one topic, through kafkajs's eachBatch.
 *
 * A batch is buffered and handed out by `take()` as the app has room; its eachBatch call stays open until
 * the app has taken all of it, and after that for as long as work of the partition runs (retries waiting
 * for their backoff aside) and the broker has nothing newer, heartbeating meanwhile. That is the
 * back-pressure (kafkajs fetches a partition again only after its batch returns) and the revoke hook:
 * work in flight nearly always sits under an open eachBatch, so a rebalance is seen by our heartbeat,
 * which revokes everything — the app finishes or abandons the partitions' in-flight work and commits its
 * watermark, heartbeating on — before kafkajs rejoins the group. kafkajs has no revoke callback to wait
 * in (its issue #592): a rebalance it sees itself, in the moment between a batch returned and the next
 * fetched, makes it rejoin at once; the subscription then drops the revoked partitions' late results, and
 * their uncommitted deliveries go again to the new owner. Offsets are committed only up to what the app
 * reports finished, never for a partition not owned.
 */
export class KafkaConsumer implements Consumer {
  private consumer: KafkajsConsumer | undefined;
  private readonly feeds = new Map<number, PartitionFeed>();
  /** The feeds as an array, for take(); rebuilt when the map changes. */
  private feedList: PartitionFeed[] = [];
  private assignment = new Set<number>();
  private cursor = 0;
  private closing = false;
  private revoking: Promise<void> | undefined;
  private commitTimer: NodeJS.Timeout | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  /** What the broker holds beyond this member's batches: when a batch held for running work lets go. */
  private readonly ends: PartitionEnds;
  private committing: Promise<void> = Promise.resolve();

  constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly request: ConsumeRequest,
    private readonly settings: KafkaConsumerSettings,
    private readonly log: Logger,
  ) {
    this.ends = new PartitionEnds(admin, request.topic, request.group, settings.fromBeginning, log);
  }

  /** Joins the group; resolves once the first assignment arrived. */
  async start(): Promise<void> {
    const s = this.settings;
    const consumer = (this.consumer = this.kafka.consumer({
      groupId: this.request.group,
      sessionTimeout: s.sessionTimeoutMs,
      rebalanceTimeout: s.rebalanceTimeoutMs,
      heartbeatInterval: s.heartbeatIntervalMs,
      maxWaitTimeInMs: s.maxWaitTimeMs,
      metadataMaxAge: s.metadataMaxAgeMs,
      allowAutoTopicCreation: false, // topics are created by KafkaBroker's createTopics, where the user allows it
      // Ours first; kafkajs's round-robin too, so plain kafkajs members can share the group.
      partitionAssigners: [subscriptionAwareAssigner, PartitionAssigners.roundRobin],
    }));
    const joined = new Promise<void>((resolve) => {
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        this.onJoin(e.payload.memberAssignment[this.request.topic] ?? []);
        resolve();
      });
    });
    // kafkajs is about to rejoin (a heartbeat outside our batches saw the rebalance): stop handing out.
    consumer.on(consumer.events.REBALANCING, () => void this.revokeAll().catch((error) => this.log.warn('revoke failed', { error })));
    consumer.on(consumer.events.CRASH, (e) => {
      this.log.error('kafka consumer crashed', { error: e.payload.error, restart: e.payload.restart });
      // kafkajs restarts only after errors it deems retriable; after any other, the app would stop reading.
      if (!e.payload.restart) this.restartAfterCrash();
    });
    await consumer.connect();
    await consumer.subscribe({ topic: this.request.topic, fromBeginning: s.fromBeginning });
    await this.run();
    await joined;
    this.commitTimer = setInterval(() => void this.flush().catch(() => {}), s.commitIntervalMs);
    this.commitTimer.unref();
  }

  private run(): Promise<void> {
    return this.consumer!.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1024,
      eachBatch: (payload) => this.eachBatch(payload),
    });
  }

  /**
   * kafkajs gave up on the consumer (it has left the group): revoke what it held — the app settles or
   * abandons that work, uncommitted work goes to the next owner — then join again, a second later (and
   * again, a second after each failed attempt), so that the subscription keeps serving.
   */
  private restartAfterCrash(): void {
    if (this.closing) return;
    void this.revokeAll()
      .catch((error: unknown) => this.log.warn('revoke failed', { error }))
      .then(() => {
        if (this.closing) return;
        clearTimeout(this.restartTimer);
        this.restartTimer = setTimeout(() => {
          if (this.closing) return;
          this.log.warn('kafka consumer restarting after a crash', { group: this.request.group, topic: this.request.topic });
          this.run().catch((error: unknown) => {
            this.log.error('kafka consumer restart failed; trying again', { error });
            this.restartAfterCrash();
          });
        }, RESTART_MS);
      });
  }

  take(max: number): readonly InboundMessage[] {
    // Drain one partition's batch before moving to the next: its eachBatch returns sooner, so kafkajs
    // fetches that partition again while the others' batches are still being worked on — when they are led
    // by other brokers (kafkajs fetches from a broker again once every batch of its last fetch returned).
    const out: InboundMessage[] = [];
    const feeds = this.feedList;
    const n = feeds.length;
    for (let k = 0; k < n && out.length < max; k++) {
      const feed = feeds[(this.cursor + k) % n]!;
      if (feed.paused || feed.revoked) continue;
      feed.takeInto(out, max - out.length);
      if (out.length === max) {
        this.cursor = (this.cursor + k) % n;
        return out;
      }
    }
    this.cursor = n > 0 ? (this.cursor + 1) % n : 0;
    return out;
  }

  backlog(): number {
    let waiting = 0;
    for (const f of this.feeds.values()) if (!f.revoked) waiting += f.buffered();
    return waiting;
  }

  async lag(): Promise<number> {
    if (this.assignment.size === 0 || this.closing) return 0;
    const [ends, committed] = await Promise.all([
      this.admin.fetchTopicOffsets(this.request.topic),
      this.admin.fetchOffsets({ groupId: this.request.group, topics: [this.request.topic] }),
    ]);
    const committedOf = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    let lag = 0;
    for (const end of ends) {
      if (!this.assignment.has(end.partition)) continue;
      const c = committedOf.get(end.partition) ?? -1;
      const position = this.feeds.get(end.partition)?.position ?? (c >= 0 ? c : Number(end.low));
      lag += Math.max(0, Number(end.high) - position);
    }
    return lag;
  }

  assigned(): readonly number[] {
    return [...this.assignment];
  }

  pause(partition: number): void {
    const f = this.feeds.get(partition);
    if (f) f.paused = true;
  }

  resume(partition: number): void {
    const f = this.feeds.get(partition);
    if (f?.paused) {
      f.paused = false;
      this.request.onReadable();
    }
  }

  commit(partition: number, offset: number): void {
    if (this.assignment.has(partition)) this.feeds.get(partition)?.markCommittable(offset);
  }

  settled(partition: number): void {
    this.feeds.get(partition)?.settled();
  }

  /** Sends every pending commit of the partitions owned, one request at a time. */
  flush(): Promise<void> {
    this.committing = this.committing.then(() => this.sendCommits(), () => this.sendCommits());
    return this.committing;
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.commitTimer);
    clearTimeout(this.restartTimer);
    for (const f of this.feeds.values()) f.wake();
    await this.flush().catch((error) => this.log.warn('final commit failed', { error }));
    await this.consumer?.disconnect(); // leaves the group
    this.feeds.clear();
    this.feedList = [];
    this.assignment.clear();
  }

  private async sendCommits(): Promise<void> {
    const offsets: { topic: string; partition: number; offset: string }[] = [];
    const sent: [PartitionFeed, number][] = [];
    for (const f of this.feeds.values()) {
      const c = f.committable;
      if (c === undefined || (f.committed !== undefined && c <= f.committed) || !this.assignment.has(f.partition)) continue;
      offsets.push({ topic: this.request.topic, partition: f.partition, offset: String(c) });
      sent.push([f, c]);
    }
    if (offsets.length === 0 || !this.consumer) return;
    try {
      await this.consumer.commitOffsets(offsets);
      for (const [f, c] of sent) f.committed = c;
    } catch (error) {
      // After a rebalance the commit is refused; what it held is delivered again (at least once).
      this.log.warn('commit refused', { error, offsets });
    }
  }

  private async eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const p = batch.partition;
    // A partition given back to this member while its revoke still runs: wait for the revoke, then read anew.
    if (this.feeds.get(p)?.revoked && this.revoking) await this.revoking;
    if (this.closing || !this.assignment.has(p)) return;
    let feed = this.feeds.get(p);
    if (!feed) {
      this.feeds.set(p, (feed = new PartitionFeed(this.request.topic, p)));
      this.feedList = [...this.feeds.values()];
    }
    if (feed.revoked) return;
    // kafkajs's messages as they are: the feed wraps each one only when the app takes it.
    const messages = batch.messages;
    this.ends.seen(p, Number(batch.highWatermark));
    if (messages.length === 0) {
      feed.fetchedEnd = Number(batch.lastOffset()) + 1;
      await this.beat(heartbeat);
      resolveOffset(batch.lastOffset()); // only control records
      return;
    }
    const end = Number(messages[messages.length - 1]!.offset) + 1;
    feed.fetchedEnd = end;
    feed.append(messages);
    this.request.onReadable();
    // Hold the batch until the app has taken all of it: kafkajs fetches this partition again only after, so
    // nothing is read beyond what the app has room for (one batch of read-ahead per partition). Once taken,
    // it is still held while work of the partition runs and the broker has nothing newer in any partition
    // (kafkajs fetches again from a broker only once all its batches returned; the ends are asked for every
    // POLL_MS): so that work in flight has an open eachBatch whose heartbeat sees a rebalance before kafkajs
    // rejoins, and yet newer messages are fetched at once.
    const active = this.request.active;
    const taken = (): boolean => (feed.position ?? -1) >= end;
    const busy = (): boolean => !taken() || (active !== undefined && active(p) > 0 && !this.newer());
    while (!this.closing && !feed.revoked && isRunning() && !isStale() && busy()) {
      const caughtUp = taken();
      await feed.until(end, caughtUp ? Math.min(POLL_MS, this.settings.heartbeatIntervalMs) : this.settings.heartbeatIntervalMs);
      if (caughtUp && busy()) await this.refreshEnds();
      if (!busy()) break;
      await this.beat(heartbeat);
    }
    if (this.closing || feed.revoked || isStale()) return;
    await this.beat(heartbeat);
    resolveOffset(batch.lastOffset());
  }

  /**
   * Heartbeats (when one is due: kafkajs sends at most one per interval) while a batch is held and as it
   * returns, so that kafkajs's own heartbeat right after finds one just sent and does not look: a rebalance
   * is seen here, where the revoke is waited for, and not by kafkajs, which would rejoin at once while work
   * still runs. Then it revokes everything and throws the rebalance to kafkajs, which rejoins.
   */
  private async beat(heartbeat: () => Promise<void>): Promise<void> {
    try {
      await heartbeat();
    } catch (error) {
      // A heartbeat that failed otherwise (a slow coordinator, a timeout) is tried again next round; throwing
      // it would make kafkajs retry the whole batch with backoff, or crash the consumer.
      if (!isRebalance(error)) return this.log.debug('heartbeat failed', { error });
      await this.heartbeating(this.revokeAll(), heartbeat);
      throw error;
    }
  }

  /** True when an owned partition has messages that no batch brought yet. */
  private newer(): boolean {
    return this.ends.newer(this.assignment, (q) => this.feeds.get(q)?.fetchedEnd);
  }

  /** Asks the broker how far the partitions go (and, for those no batch came from, where they are read from). */
  private refreshEnds(): Promise<void> {
    return this.ends.refresh([...this.assignment].some((q) => this.feeds.get(q)?.fetchedEnd === undefined));
  }

  /**
   * Waits for `work` while heartbeating, so that the coordinator keeps this member while it settles its
   * revoked partitions (during a rebalance a heartbeat answers REBALANCE_IN_PROGRESS, and still counts). Gives
   * up waiting one heartbeat interval before the rebalance timeout: the work goes on, its results dropped.
   */
  private async heartbeating(work: Promise<void>, heartbeat: () => Promise<void>): Promise<void> {
    const { heartbeatIntervalMs, rebalanceTimeoutMs } = this.settings;
    const giveUpAt = Date.now() + Math.max(heartbeatIntervalMs, rebalanceTimeoutMs - heartbeatIntervalMs);
    let finished = false;
    const done = work.then(
      () => void (finished = true),
      () => void (finished = true),
    );
    while (!finished && Date.now() < giveUpAt) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, heartbeatIntervalMs)))]);
      clearTimeout(timer);
      if (!finished) await heartbeat().catch(() => {}); // REBALANCE_IN_PROGRESS is the expected answer
    }
    if (!finished) this.log.warn('revoke: in-flight work did not settle before the rebalance timeout; its results will be dropped');
  }

  /**
   * A rebalance is coming (eager: every partition goes): stop handing out, let the app settle its
   * in-flight work and commit, send the commits while still a member of this generation, let go.
   */
  private revokeAll(): Promise<void> {
    if (this.revoking) return this.revoking;
    const revoked = [...this.feeds.values()].filter((f) => !f.revoked);
    if (revoked.length === 0) return Promise.resolve();
    for (const f of revoked) {
      f.revoked = true;
      f.clear();
      f.wake();
    }
    const revoking = (async () => {
      try {
        await this.request.onRevoke(revoked.map((f) => f.partition));
        await this.flush();
      } finally {
        for (const f of revoked) if (this.feeds.get(f.partition) === f) this.feeds.delete(f.partition);
        this.feedList = [...this.feeds.values()];
      }
    })();
    // Cleared once it settles (not inside it: a revoke that finished at once would clear before being set).
    const clear = (): void => void (this.revoking === revoking && (this.revoking = undefined));
    revoking.then(clear, clear);
    return (this.revoking = revoking);
  }

  private onJoin(partitions: readonly number[]): void {
    // Partitions still held here were revoked without a heartbeat telling us first: the app drops them
    // (their uncommitted work is delivered again to whoever owns them now).
    const stale: number[] = [];
    for (const f of this.feeds.values()) {
      if (f.revoked) continue; // a revoke is under way for it
      stale.push(f.partition);
      f.revoked = true;
      f.clear();
      f.wake();
      this.feeds.delete(f.partition);
    }
    this.feedList = [...this.feeds.values()];
    this.assignment = new Set(partitions);
    this.ends.reset();
    if (stale.length > 0) void this.request.onRevoke(stale).catch((error) => this.log.warn('revoke failed', { error }));
    this.log.debug('kafka assignment', { group: this.request.group, topic: this.request.topic, partitions });
  }
}
