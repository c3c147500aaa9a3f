import type { Admin, Consumer as PkConsumer, ConsumerOptions, MessagesStream } from '@platformatic/kafka';
import { SystemClock } from '../../core/clock.js';
import { deadlineIn, deadlineOf } from '../../core/deadline.js';
import type { InboundMessage } from '../../core/message.js';
import type { Clock, ConsumeRequest, Consumer, Logger, PartitionLag } from '../../core/ports.js';
import { CrashRestarts } from '../kafka/consumer/crash-restarts.js';
import { subscriptionAssigner } from './assigner.js';
import { listingAssigned } from './assigned-metadata.js';
import { readCommitted } from './committed-fetch.js';
import type { Record } from './feed.js';
import { Feeds } from './feeds.js';
import { commitEnds, groupOffsets, lagPast, type PartitionOffsets } from './offsets.js';
import { pk } from './client.js';
import { FeedCommits } from './commits.js';
import { countFetches } from './fetches.js';
import { noteHeard } from './heard.js';
import { GroupMembership } from './membership.js';
import { ResumePositions } from './positions.js';
import { RequestFeeds } from './requests.js';
import { TopicGrowth } from './topic-growth.js';
import type { PlatformaticSettings } from './settings.js';

/** Messages read into the feeds and not taken, at most: past it the stream holds the rest and stops fetching. */
const READ_AHEAD = 2048;

const SYSTEM_CLOCK = new SystemClock();

/**
 * One member of a Kafka consumer group reading one topic, through @platformatic/kafka's messages stream
 * (pulled, so that the stream stops fetching while the app has no room). What it owns, as the group's joins,
 * heartbeats and rebalances tell it, is its {@link GroupMembership}. Offsets are committed only up to what the
 * app reports finished.
 */
export class PlatformaticConsumer implements Consumer {
  private consumer: PkConsumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  private stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** The partitions handed out to the app, taken, and let go. */
  private readonly feeds = new Feeds();
  private closing = false;
  private closed: Promise<void> | undefined;
  private fetches = 0;
  private readonly restarts: CrashRestarts;
  /** The consumer whose stream failed, until it is replaced. */
  private failed: PkConsumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** A `pull` is queued. */
  private pulling = false;
  /** The partitions of the requests topic this member owns, if the request names one. */
  private readonly requests: RequestFeeds | undefined;
  /** The group's offsets of the feeds, committed up to what the app finished. */
  private readonly commits: FeedCommits;
  /** Where the reading of each partition let go resumes, should it come back. */
  private readonly positions = new ResumePositions();
  /** The topic's partition count, and partitions added while it is read. */
  private readonly growth: TopicGrowth;
  /** What this member owns, and the revokes and assignments as the group's events come. */
  private readonly membership: GroupMembership;

  constructor(
    private readonly admin: Admin,
    private readonly request: ConsumeRequest,
    private readonly settings: PlatformaticSettings,
    private readonly log: Logger,
    private readonly clock: Clock,
  ) {
    this.commits = new FeedCommits({
      topic: request.topic,
      log,
      clock,
      rebalanceTimeoutMs: settings.rebalanceTimeoutMs,
      consumer: () => this.consumer,
      feeds: () => this.feeds.committing(),
      closing: () => this.closing,
    });
    const requests = request.requests;
    if (requests !== undefined)
      this.requests = new RequestFeeds({
        topic: requests.topic,
        handle: (p, messages) => requests.handle(p, messages),
        commit: (p, offset, leaderEpoch) => this.commitRequests(p, offset, leaderEpoch),
        ready: (p) => this.feeds.ready(p),
        retryMs: settings.heartbeatIntervalMs,
        log,
      });
    const member = {
      group: request.group,
      topic: request.topic,
      closing: () => this.closing,
      revokeAll: () => this.membership.revokeAll(),
      run: () => this.reopen(),
    };
    // On the system clock: the broker's outage runs in real time, whatever the app's clock (a test's ManualClock).
    this.restarts = new CrashRestarts(member, log, SYSTEM_CLOCK);
    this.growth = new TopicGrowth({
      topic: request.topic,
      consumer: () => this.consumer,
      classic: settings.groupProtocol === 'classic',
      closing: () => this.closing,
      log,
    });
    this.membership = new GroupMembership({
      admin,
      request,
      settings,
      log,
      feeds: this.feeds,
      positions: this.positions,
      requests: this.requests,
      commits: this.commits,
      growth: this.growth,
      consumer: () => this.consumer,
      stream: () => this.stream,
      closing: () => this.closing,
      pull: () => this.pull(),
      crashed: (error) => this.restarts.crashed(error),
    });
  }

  async start(partitions: number): Promise<void> {
    this.growth.count = partitions;
    if (this.request.fromEnd === true) await commitEnds(this.admin, this.request.group, this.request.topic, partitions);
    const joined = this.membership.firstAssignment();
    await this.open();
    await joined;
    this.commits.every(this.settings.commitIntervalMs);
    this.growth.watch(this.settings.metadataMaxAgeMs);
  }

  /**
   * Makes the client's consumer and its messages stream, and joins the group: at start, and again after the
   * stream failed (see {@link CrashRestarts}). Events of a consumer replaced since are ignored.
   */
  private async open(): Promise<void> {
    const s = this.settings;
    const { topic, group } = this.request;
    const options = {
      clientId: s.clientId,
      bootstrapBrokers: s.bootstrapBrokers,
      groupId: group,
      autocommit: false,
      maxWaitTime: s.maxWaitTimeMs,
      metadataMaxAge: s.metadataMaxAgeMs,
      isolationLevel: pk.FetchIsolationLevels.READ_COMMITTED,
      // The client checks these under either protocol (the broker sets them under the consumer protocol).
      sessionTimeout: s.sessionTimeoutMs,
      rebalanceTimeout: s.rebalanceTimeoutMs,
      heartbeatInterval: s.heartbeatIntervalMs,
      ...(s.groupProtocol === 'consumer'
        ? // The broker's range assignor gives partition p of both topics to one member (co-partitioned).
          { groupProtocol: 'consumer', ...(this.requests !== undefined && { groupRemoteAssignor: 'range' }) }
        : { partitionAssigner: subscriptionAssigner }),
      ...s.platformatic,
    };
    // The consumer protocol's options type leaves out the session timings the client checks all the same.
    // Its fetches' answers are filtered of aborted transactions as Kafka's own consumer does (committed-fetch.ts).
    // Its metadata lists every partition it is assigned (assigned-metadata.ts).
    const consumer = listingAssigned(
      readCommitted(new pk.Consumer(options as unknown as ConsumerOptions<Buffer, Buffer, Buffer, Buffer>)),
    );
    this.consumer = consumer;
    this.growth.joining();
    const current = (): boolean => this.consumer === consumer && this.failed !== consumer;
    const classic = s.groupProtocol !== 'consumer';
    if (classic) countFetches();
    noteHeard();
    // The client's own rejoin can fail for good (its retries spent, the coordinator moving): it tells the consumer's
    // `error` listeners, and with none the process would die of it. A crash, as the stream's failure is.
    const crashed = (error: Error): void => {
      if (!current()) return;
      // What the failed consumer tells from now on (its own rejoin on a dead stream) no longer counts.
      this.failed = consumer;
      this.restarts.crashed(error);
    };
    consumer.on('error', crashed);
    const lost = (error: Error): void => {
      if (!current()) return;
      this.failed = consumer;
      this.restarts.lost(error);
    };
    this.membership.follow(consumer, current, lost);
    const stream = await consumer.consume({
      topics: [topic, ...(this.requests ? [this.requests.topic] : [])],
      mode: 'committed',
      fallbackMode: s.fromBeginning ? 'earliest' : 'latest',
      autocommit: false,
      maxWaitTime: s.maxWaitTimeMs,
      isolationLevel: pk.FetchIsolationLevels.READ_COMMITTED,
    });
    if (!current()) return void stream.close().catch(() => {});
    this.stream = stream;
    stream.on('readable', () => {
      if (current()) this.pull();
    });
    stream.on('fetch', () => this.fetches++);
    stream.on('error', crashed);
    this.membership.sync();
  }

  /** The stream failed: lets the old consumer go (in the background) and opens a new one. */
  private async reopen(): Promise<void> {
    const { stream, consumer } = this;
    this.stream = undefined;
    this.consumer = undefined;
    void (async () => {
      await stream?.close();
      await consumer?.close(true);
    })().catch((error: unknown) => this.log.debug('closing the failed consumer failed', { error }));
    await this.open();
  }

  /** Commits the requests topic's `offset` of `partition`; one that fails is committed by a later run. */
  private async commitRequests(partition: number, offset: number, leaderEpoch: number): Promise<void> {
    const topic = this.requests!.topic;
    const offsets = [{ topic, partition, offset: BigInt(offset), leaderEpoch }];
    await this.consumer
      ?.commit({ offsets })
      .catch((error: unknown) => this.log.debug('requests commit not taken', { partition, offset, error }));
  }

  inSession(partition: number): true | Promise<void> {
    return this.membership.inSession(partition);
  }

  /** Reads what the stream has into the feeds, up to `READ_AHEAD` waiting; the stream holds the rest. */
  private pull(): void {
    this.pulling = false;
    const stream = this.stream;
    if (stream === undefined || !this.membership.readable(stream)) return;
    let added = false;
    for (let waiting = this.backlog() + (this.requests?.buffered() ?? 0); waiting < READ_AHEAD;) {
      const m = stream.read() as Record | null;
      if (m === null) break;
      if (this.requests !== undefined && m.topic === this.requests.topic) {
        if (this.requests.admit(m)) waiting++;
        continue;
      }
      let feed = this.feeds.get(m.partition);
      if (feed === undefined) {
        this.membership.sync(); // a partition the client assigned before its event reached us
        feed = this.feeds.get(m.partition);
      }
      if (feed?.admit(m) === true) {
        if (!added) this.restarts.batchArrived();
        added = true;
        waiting++;
      }
    }
    if (added) this.request.onReadable();
  }

  take(max: number, perPartition?: (partition: number) => number): readonly InboundMessage[] {
    const out = this.feeds.take(max, perPartition);
    // Room made: read on from the stream (once per turn, and once half the read-ahead is taken).
    if (out.length > 0 && !this.pulling && this.backlog() < READ_AHEAD / 2) {
      this.pulling = true;
      queueMicrotask(() => this.pull());
    }
    return out;
  }

  backlog(): number {
    return this.feeds.backlog();
  }

  /** Messages beyond what this member has taken, over the partitions it owns (its requests topic's too). */
  async lag(): Promise<number> {
    if (this.closing) return 0;
    if (this.membership.rebalancing)
      throw Object.assign(new Error(`group "${this.request.group}" is rebalancing`), { retriable: true });
    const requests = this.requests;
    const asked = requests?.owned() ?? [];
    if (this.feeds.size === 0 && asked.length === 0) return 0;
    const positions = new Map([...this.feeds.entries()].map(([p, f]) => [p, f.position]));
    let lag = lagPast(await this.offsets(), positions);
    if (requests !== undefined && asked.length > 0) {
      const offsets = await groupOffsets(this.admin, this.request.group, requests.topic, this.growth.count);
      lag += lagPast(offsets, new Map(asked.map((p) => [p, requests.position(p)])));
    }
    return lag;
  }

  async partitionLags(): Promise<readonly PartitionLag[]> {
    if (this.closing || this.feeds.size === 0) return [];
    const offsets = await this.offsets();
    return this.feeds
      .partitions()
      .sort((a, b) => a - b)
      .map((partition) => ({ partition, lag: lagPast(offsets, new Map([[partition, undefined]])) }));
  }

  private offsets(): Promise<Map<number, PartitionOffsets>> {
    return groupOffsets(this.admin, this.request.group, this.request.topic, this.growth.count);
  }

  assigned(): readonly number[] {
    return this.feeds.partitions();
  }

  polls(): number {
    return this.fetches;
  }

  assignments(): number {
    return this.membership.assignments;
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
    this.feeds.commit(partition, offset);
  }

  flush(): Promise<void> {
    return this.commits.flush();
  }

  close(deadline?: Promise<void>): Promise<void> {
    this.closed ??= this.shutDown(deadline);
    return this.closed;
  }

  private async shutDown(deadline: Promise<void> | undefined): Promise<void> {
    this.commits.cancel();
    this.growth.cancel();
    this.restarts.cancel();
    const timeoutMs = this.request.shutdownTimeoutMs ?? 30_000;
    const close = deadline ? deadlineOf(deadline) : deadlineIn(this.clock, timeoutMs, { keepAlive: true });
    try {
      this.closing = true;
      const released = this.membership.release();
      this.commits.joined();
      await close.within(released);
      const leave = (async () => {
        await this.stream?.close();
        await this.consumer?.close(true);
        if (this.request.forgetOnClose === true) await this.admin.deleteGroups({ groups: [this.request.group] });
      })().catch((error: unknown) => this.log.warn('leaving the group failed', { error }));
      if (!(await close.within(leave)))
        this.log.warn('leaving the group: the broker did not answer within the shutdown timeout', { timeoutMs });
    } finally {
      close.cancel();
      this.feeds.clear();
    }
  }
}
