import type { Admin, Consumer as KafkajsConsumer } from 'kafkajs';
import { PartitionAssigners, type Kafka } from '../kafkajs.js';
import { stickyAssigner } from '../group/assigner.js';
import { MemberClaim } from '../group/claims.js';
import type { InboundMessage } from '../../../core/message.js';
import type { Clock, ConsumeRequest, Consumer, Logger, PartitionLag, Timer } from '../../../core/ports.js';
import { Waiters } from '../../../core/waiters.js';
import { BatchReader, SESSION_CLOCK } from './batch-reader.js';
import { askAgain } from '../catching-up.js';
import { CLOSE_TIMEOUT_MS, closeDeadline, forgetGroup, leaveGroup, type Within } from './close-deadline.js';
import { CrashRestarts } from './crash-restarts.js';
import type { KafkaConsumerSettings } from '../options.js';
import { groupLag, partitionLags } from './group-lag.js';
import { OwnedPartitions } from './owned-partitions.js';
import { PartitionEnds } from './partition-ends.js';
import { OffsetCommits, pending } from './offset-commits.js';
import { RequestBatches } from './request-batches.js';

/**
 * One member of a Kafka consumer group reading one topic, through kafkajs's eachBatch (see
 * {@link BatchReader}: a batch is held until the app has taken it, and while its partition's work runs).
 *
 * A rebalance is seen by our heartbeat under an open batch, which revokes everything — the app finishes or
 * abandons the partitions' in-flight work and commits its watermark, heartbeating on — before kafkajs
 * rejoins the group. kafkajs has no revoke callback to wait in (its issue #592): a rebalance it sees itself,
 * in the moment between a batch returned and the next fetched, makes it rejoin at once; the subscription
 * then drops the revoked partitions' late results, and their uncommitted deliveries go again to the new
 * owner. Offsets are committed only up to what the app reports finished, never for a partition not owned.
 *
 * Its own timers — the commit interval, the backoff of crash restarts, the close deadline — run on the
 * app's clock; those paced against the broker's session run on the system clock (see `SESSION_CLOCK`).
 */
export class KafkaConsumer implements Consumer {
  private consumer: KafkajsConsumer | undefined;
  private closing = false;
  private commitTimer: Timer | undefined;
  /** kafkajs's run() under way: joining the group (at start, or after a crash). */
  private starting: Promise<void> | undefined;
  private closed: Promise<void> | undefined;
  /** The request's `onAssign` of the latest assignment, until it settles (it never rejects). */
  private assigning: Promise<void> | undefined;
  private readonly partitions: OwnedPartitions;
  /** What the broker holds beyond this member's batches: when a batch held for running work lets go. */
  private readonly ends: PartitionEnds;
  private readonly commits: OffsetCommits;
  private readonly restarts: CrashRestarts;
  private readonly batches: BatchReader;
  /** The batches of the request's requests topic, if it names one (see `ConsumeRequest.requests`). */
  private readonly requestBatches: RequestBatches | undefined;
  /** The partitions of the requests topic in the latest assignment. */
  private requestPartitions: ReadonlySet<number> = new Set();
  /** What this member owns, which its next join tells the group's leader (see {@link stickyAssigner}). */
  private readonly claim = new MemberClaim();
  /**
   * When (wall clock, ms) the coordinator last heard this member, as far as it can tell: the sending of the
   * latest heartbeat (or join) it answered. The session is the member's until `sessionTimeoutMs` after.
   */
  private heardAt = -Infinity;
  /** When the latest Heartbeat and SyncGroup requests answered were sent (kafkajs's request events). */
  private readonly sentAt = new Map<string, number>();
  /** Woken when `inSession` may answer otherwise: the coordinator answered, a rebalance began, closing. */
  private readonly sessionChanged = new Waiters();
  /** Fetch requests kafkajs began, and assignments it received (see `Consumer.polls`, `Consumer.assignments`). */
  private fetches = 0;
  private joins = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly request: ConsumeRequest,
    private readonly settings: KafkaConsumerSettings,
    private readonly log: Logger,
    /** The app's clock: the commit interval, the backoff of crash restarts, the close deadline. */
    private readonly clock: Clock,
  ) {
    const { topic, group } = request;
    this.ends = new PartitionEnds(admin, topic, group, settings.fromBeginning, log);
    this.commits = new OffsetCommits(
      topic,
      log,
      () => this.partitions.due(),
      () => this.consumer,
    );
    this.partitions = new OwnedPartitions(topic, this.commits, (p) => request.onRevoke(p), SESSION_CLOCK);
    const member = {
      group,
      topic,
      closing: () => this.closing,
      revokeAll: () => this.partitions.revokeAll(),
      run: () => this.run(),
    };
    this.restarts = new CrashRestarts(member, log, clock);
    const { partitions, ends, restarts } = this;
    const assigning = (): Promise<void> | undefined => this.assigning;
    this.batches = new BatchReader({
      partitions,
      ends,
      restarts,
      request,
      settings,
      log,
      closing: member.closing,
      assigning,
    });
    const requests = request.requests;
    if (requests !== undefined) {
      const batches = this.batches;
      this.requestBatches = new RequestBatches({
        topic: requests.topic,
        handle: (p, messages) => requests.handle(p, messages),
        consumer: () => this.consumer,
        owned: () => this.requestPartitions,
        heartbeatIntervalMs: settings.heartbeatIntervalMs,
        log,
        closing: member.closing,
        assigned: (payload) => batches.assigned(payload),
        beat: (heartbeat) => batches.beat(heartbeat),
      });
    }
  }

  /** Joins the group; resolves once the first assignment arrived. */
  async start(): Promise<void> {
    const consumer = this.createConsumer();
    this.consumer = consumer;
    const joined = new Promise<void>((resolve) => {
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        this.joins++;
        this.heard('SyncGroup');
        this.claim.assigned(e.payload.memberAssignment);
        const requests = this.request.requests;
        if (requests !== undefined) this.requestPartitions = new Set(e.payload.memberAssignment[requests.topic] ?? []);
        this.onJoin(e.payload.memberAssignment[this.request.topic] ?? []);
        resolve();
      });
    });
    // kafkajs is about to rejoin (a heartbeat outside our batches saw the rebalance): stop handing out.
    consumer.on(consumer.events.REBALANCING, () => {
      void this.partitions.revokeAll().catch((error) => this.log.warn('revoke failed', { error }));
      this.sessionChanged.wake();
    });
    consumer.on(consumer.events.CRASH, (e) => this.restarts.crashed(e.payload.error));
    consumer.on(consumer.events.FETCH_START, () => this.fetches++);
    // kafkajs tells the generation of an assignment only with what the member does in it.
    consumer.on(consumer.events.HEARTBEAT, (e) => {
      this.heard('Heartbeat');
      this.claim.confirmed(e.payload.groupGenerationId);
    });
    // Emitted as an answer arrives, before the code that sent the request goes on (a HEARTBEAT event).
    consumer.on(consumer.events.REQUEST, ({ payload: { apiName, sentAt } }) => {
      if (apiName === 'Heartbeat' || apiName === 'SyncGroup') this.sentAt.set(apiName, sentAt);
    });
    consumer.on(consumer.events.COMMIT_OFFSETS, (e) => this.claim.confirmed(e.payload.groupGenerationId));
    this.commits.watch(consumer);
    await consumer.connect();
    if (this.request.fromEnd === true) await this.startAtEnd();
    const topics = [this.request.topic, ...(this.request.requests ? [this.request.requests.topic] : [])];
    // kafkajs reads the topics' metadata here, and gives up while the broker still catches up with a topic
    // another client has just created.
    await askAgain(() => consumer.subscribe({ topics, fromBeginning: this.settings.fromBeginning }), SESSION_CLOCK);
    await this.run();
    await joined;
    this.commitEvery(this.settings.commitIntervalMs);
  }

  /**
   * `ConsumeRequest.fromEnd`: the partitions the group has committed nothing of are committed at their end
   * now, before it joins (kafkajs would only look for the end at its first fetch, after messages published
   * meanwhile).
   */
  private async startAtEnd(): Promise<void> {
    const { topic, group } = this.request;
    const [ends, committed] = await Promise.all([
      askAgain(() => this.admin.fetchTopicOffsets(topic), SESSION_CLOCK),
      this.admin.fetchOffsets({ groupId: group, topics: [topic] }),
    ]);
    const none = new Set((committed[0]?.partitions ?? []).filter((p) => Number(p.offset) < 0).map((p) => p.partition));
    const partitions = ends
      .filter((e) => none.has(e.partition))
      .map((e) => ({ partition: e.partition, offset: e.high }));
    if (partitions.length > 0) await this.admin.setOffsets({ groupId: group, topic, partitions });
  }

  private createConsumer(): KafkajsConsumer {
    const s = this.settings;
    return this.kafka.consumer({
      groupId: this.request.group,
      sessionTimeout: s.sessionTimeoutMs,
      rebalanceTimeout: s.rebalanceTimeoutMs,
      heartbeatInterval: s.heartbeatIntervalMs,
      maxWaitTimeInMs: s.maxWaitTimeMs,
      metadataMaxAge: s.metadataMaxAgeMs,
      allowAutoTopicCreation: false, // topics are created by KafkaBroker's createTopics, where the user allows it
      // Ours first; kafkajs's round-robin too, so plain kafkajs members can share the group.
      partitionAssigners: [stickyAssigner(this.claim), PartitionAssigners.roundRobin],
      // kafkajs never restarts the consumer itself: Sluice does (CrashRestarts), so that it backs off, and
      // so that a stop knows whether a join is under way (kafkajs's disconnect does nothing to a restart's).
      retry: { restartOnFailure: async () => false },
    });
  }

  /** kafkajs's run(): joins the group and reads; resolves once joined, or once a failed join crashed. */
  private run(): Promise<void> {
    const starting = this.consumer!.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1024,
      eachBatch: (payload) =>
        this.requestBatches !== undefined && payload.batch.topic === this.request.requests?.topic
          ? this.requestBatches.eachBatch(payload)
          : this.batches.eachBatch(payload),
    });
    const done = (): void => {
      if (this.starting === starting) this.starting = undefined;
    };
    starting.then(done, done);
    this.starting = starting;
    return starting;
  }

  /** Sends the pending commits every `ms` on the app's clock, until the consumer closes. */
  private commitEvery(ms: number): void {
    this.commitTimer = this.clock.setTimer(ms, () => {
      if (this.closing) return;
      this.commitEvery(ms);
      void this.flush().catch(() => {});
    });
  }

  take(max: number, perPartition?: (partition: number) => number): readonly InboundMessage[] {
    // Drain one partition's batch before moving to the next: its eachBatch returns sooner, so kafkajs
    // fetches that partition again while the others' batches are still being worked on — when they are led
    // by other brokers (kafkajs fetches from a broker again once every batch of its last fetch returned).
    return this.partitions.take(max, perPartition);
  }

  backlog(): number {
    return this.partitions.backlog();
  }

  async lag(): Promise<number> {
    const owned = this.partitions.assignment;
    if (owned.size === 0 || this.closing) return 0;
    const { group, requests: reading } = this.request;
    const requests = reading?.topic;
    const [lag, unanswered] = await Promise.all([
      groupLag(this.admin, group, this.request.topic, owned, (p) => this.partitions.feed(p)?.position),
      // Requests are committed once handled: what is above the committed offset waits for an answer.
      requests === undefined ? 0 : groupLag(this.admin, group, requests, owned, () => undefined),
    ]).catch((error: unknown) => {
      throw metadataNotReady(error)
        ? Object.assign(new Error('kafka: topic metadata not served yet'), { cause: error, retriable: true })
        : error;
    });
    return lag + unanswered;
  }

  /** Per owned partition of the topic: its end less the group's committed offset (asks the broker). */
  async partitionLags(): Promise<readonly PartitionLag[]> {
    const owned = this.partitions.assignment;
    if (owned.size === 0 || this.closing) return [];
    return partitionLags(this.admin, this.request.group, this.request.topic, owned);
  }

  polls(): number {
    return this.fetches;
  }

  assignments(): number {
    return this.joins;
  }

  assigned(): readonly number[] {
    return [...this.partitions.assignment];
  }

  inSession(partition: number): true | Promise<void> {
    const feed = this.partitions.feed(partition);
    const held = this.partitions.assignment.has(partition) && feed?.revoked !== true;
    if (held && !this.closing && Date.now() < this.heardAt + this.settings.sessionTimeoutMs) return true;
    return this.sessionChanged.next();
  }

  /** The coordinator answered a request of `apiName`: it heard this member when that was sent. */
  private heard(apiName: string): void {
    this.heardAt = Math.max(this.heardAt, this.sentAt.get(apiName) ?? Date.now());
    this.sessionChanged.wake();
  }

  pause(partition: number): void {
    const f = this.partitions.feed(partition);
    if (f) f.paused = true;
  }

  resume(partition: number): void {
    const f = this.partitions.feed(partition);
    if (f?.paused) {
      f.paused = false;
      this.request.onReadable();
    }
  }

  commit(partition: number, offset: number): void {
    this.partitions.commit(partition, offset);
  }

  settled(partition: number): void {
    this.partitions.feed(partition)?.settled();
  }

  /** Sends every pending commit of the partitions owned (see {@link OffsetCommits}). */
  flush(): Promise<void> {
    return this.commits.flush();
  }

  /**
   * Commits what finished and leaves the group, waiting for the broker until `deadline` (the app's stop
   * passes the deadline of its whole stop), or without one at most the app's shutdown timeout on the app's
   * clock: past it, commits not taken are abandoned (their deliveries come again) and leaving goes on in the
   * background. A join under way (kafkajs's disconnect does nothing to one) is waited for, then left.
   */
  close(deadline?: Promise<void>): Promise<void> {
    this.closed ??= this.shutDown(deadline);
    return this.closed;
  }

  private async shutDown(deadline: Promise<void> | undefined): Promise<void> {
    this.closing = true;
    this.sessionChanged.wake();
    this.commitTimer?.cancel();
    this.restarts.cancel();
    this.partitions.wakeAll();
    const timeoutMs = this.request.shutdownTimeoutMs ?? CLOSE_TIMEOUT_MS;
    const { within, cancel } = closeDeadline(deadline, timeoutMs, this.clock);
    try {
      await this.finalCommit(within, timeoutMs);
      const left = await leaveGroup(this.consumer, this.starting, within, timeoutMs, this.log);
      if (left && this.request.forgetOnClose === true)
        await forgetGroup(this.admin, this.request.group, within, this.log);
    } finally {
      cancel();
      this.partitions.clear();
    }
  }

  /** Sends the pending commits within the close's deadline; logs the offsets it could not commit. */
  private async finalCommit(within: Within, timeoutMs: number): Promise<void> {
    if (!(await within(this.flush().catch((error: unknown) => this.log.warn('final commit failed', { error })))))
      this.log.warn('final commit: the broker did not answer within the shutdown timeout', { timeoutMs });
    const unsent = [...this.partitions.all()]
      .filter(pending)
      .map((f) => ({ partition: f.partition, offset: f.committable }));
    if (unsent.length > 0)
      this.log.warn(
        'final commit failed: these offsets were not committed; what is above them will be delivered again',
        { offsets: unsent },
      );
  }

  /** Calls the request's `onAssign` once the revoke before it (if any) is done; batches wait for it. */
  private assign(partitions: readonly number[], revoking: Promise<void> | undefined): void {
    const request = this.request;
    if (request.onAssign === undefined || partitions.length === 0) return;
    const take = (): Promise<void> => request.onAssign!(partitions);
    // Called at once when nothing is being revoked: the app's start, which waits for it, sees it under way.
    const assigning: Promise<void> = (revoking === undefined ? take() : revoking.catch(() => {}).then(take))
      .catch((error: unknown) => this.log.error('the app could not take its new partitions', { partitions, error }))
      .finally(() => {
        if (this.assigning === assigning) this.assigning = undefined;
      });
    this.assigning = assigning;
  }

  private onJoin(partitions: readonly number[]): void {
    if (this.closing) return;
    const { stale, revoked } = this.partitions.assign(partitions);
    this.ends.reset();
    void revoked?.catch((error: unknown) => this.log.warn('revoke failed', { error }));
    this.assign(partitions, revoked ?? this.partitions.revoking);
    this.log.debug('kafka assignment', { group: this.request.group, topic: this.request.topic, partitions, stale });
  }
}

/**
 * kafkajs's `fetchTopicOffsets` fails with a TypeError of its own when the broker's metadata of a topic just
 * created lists no partitions yet: a moment the broker catches up with, which `lag()` asks to be asked again.
 */
function metadataNotReady(error: unknown): boolean {
  return error instanceof TypeError && /kafkajs[\\/]src[\\/]admin/.test(error.stack ?? '');
}
