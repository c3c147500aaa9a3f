import type { Admin, Consumer as PkConsumer, ConsumerOptions, MessagesStream } from '@platformatic/kafka';
import { SystemClock } from '../../core/clock.js';
import { deadlineIn, deadlineOf } from '../../core/deadline.js';
import type { InboundMessage } from '../../core/message.js';
import type { Clock, ConsumeRequest, Consumer, Logger, PartitionLag } from '../../core/ports.js';
import { Waiters } from '../../core/waiters.js';
import { pauseAfter } from '../kafka/catching-up.js';
import { CrashRestarts } from '../kafka/consumer/crash-restarts.js';
import { subscriptionAssigner } from './assigner.js';
import { readCommitted } from './committed-fetch.js';
import type { Record } from './feed.js';
import { Feeds } from './feeds.js';
import { commitEnds, groupOffsets, lagPast, type PartitionOffsets } from './offsets.js';
import { pk } from './client.js';
import { FeedCommits } from './commits.js';
import { countFetches, fetchesLanded } from './fetches.js';
import { heardAt, noteHeard } from './heard.js';
import { ResumePositions, placeUnread } from './positions.js';
import { RequestFeeds } from './requests.js';
import { TopicGrowth } from './topic-growth.js';
import type { PlatformaticSettings } from './settings.js';

/** Messages read into the feeds and not taken, at most: past it the stream holds the rest and stops fetching. */
const READ_AHEAD = 2048;

/** Heartbeats a new member of a consumer-protocol group waits for partitions before it starts with none. */
const EMPTY_BEATS = 4;

const SYSTEM_CLOCK = new SystemClock();

/**
 * One member of a Kafka consumer group reading one topic, through @platformatic/kafka's messages stream
 * (pulled, so that the stream stops fetching while the app has no room).
 *
 * Partitions are tracked by comparing the client's assignment after each join and heartbeat: under the
 * consumer protocol (KIP-848) only the partitions that move are revoked and assigned, and a partition that
 * stays is neither drained nor read again. Under the classic protocol a rebalance revokes everything first
 * (eager). The client waits for no revoke: the app settles what it ran of a revoked partition and commits it
 * while the partition may already be read by its next owner (what was not committed is read again there).
 * Offsets are committed only up to what the app reports finished.
 */
export class PlatformaticConsumer implements Consumer {
  private consumer: PkConsumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  private stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** The partitions handed out to the app, taken, and let go. */
  private readonly feeds = new Feeds();
  private revoking: Promise<void> = Promise.resolve();
  private closing = false;
  private closed: Promise<void> | undefined;
  private joins = 0;
  /** Classic rejoins after a rebalance: a {@link resumeAfterJoin} overtaken by a later one leaves the stream to it. */
  private rejoins = 0;
  private fetches = 0;
  private joined: (() => void) | undefined;
  private readonly restarts: CrashRestarts;
  /** The consumer whose stream failed, until it is replaced. */
  private failed: PkConsumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** A `pull` is queued. */
  private pulling = false;
  /**
   * A classic rebalance began, or the consumer failed and is opened again, and the join has not come yet:
   * what this member will own is unknown.
   */
  private rebalancing = false;
  /**
   * The stream after a classic join, until its positions are set again: what it holds was fetched from the
   * positions before the rebalance, and admitted into the new feeds it would pass over what the app dropped.
   */
  private staleStream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** Heartbeats answered: under the consumer protocol, partitions come with heartbeats after the join. */
  private beats = 0;
  /** The partitions of the requests topic this member owns, if the request names one. */
  private readonly requests: RequestFeeds | undefined;
  /** Woken when `inSession` may answer otherwise: a heartbeat answered, a revoke, closing. */
  private readonly sessionChanged = new Waiters();
  /** The group's offsets of the feeds, committed up to what the app finished. */
  private readonly commits: FeedCommits;
  /** Where the reading of each partition let go resumes, should it come back. */
  private readonly positions = new ResumePositions();
  /** The topic's partition count, and partitions added while it is read. */
  private readonly growth: TopicGrowth;

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
      revokeAll: () => {
        // Until the new consumer joins, what this member owns is unknown: `lag` asks to be asked again.
        this.rebalancing = true;
        this.revoke(this.feeds.partitions());
        return this.revoking;
      },
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
  }

  async start(partitions: number): Promise<void> {
    this.growth.count = partitions;
    if (this.request.fromEnd === true) await commitEnds(this.admin, this.request.group, this.request.topic, partitions);
    const joined = new Promise<void>((resolve) => (this.joined = resolve));
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
    const consumer = readCommitted(
      new pk.Consumer(options as unknown as ConsumerOptions<Buffer, Buffer, Buffer, Buffer>),
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
    let joinedBefore = false;
    consumer.on('consumer:group:join', () => {
      if (!current()) return;
      // A classic member whose session ended (frozen, cut off) joins again with no rebalance event: what it owned
      // went to others meanwhile, as in a rebalance, and what it read of it is stale.
      if (classic && joinedBefore && !this.rebalancing) this.rebalanceBegan();
      joinedBefore = true;
      const paused = this.rebalancing && classic;
      // Until `resumeAfterJoin` sets the positions, what the stream holds was fetched from the old ones.
      if (paused) this.staleStream = this.stream;
      this.rebalancing = false;
      this.sync();
      this.commits.joined();
      this.sessionChanged.wake();
      if (paused) void this.resumeAfterJoin(++this.rejoins);
    });
    consumer.on('consumer:heartbeat:end', () => {
      if (!current()) return;
      this.beats++;
      this.sync();
      this.sessionChanged.wake();
    });
    consumer.on('consumer:group:rebalance', () => {
      // Classic (eager): every partition goes before the rejoin. The consumer protocol revokes by the diff.
      if (current() && classic) this.rebalanceBegan();
    });
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
    this.sync();
  }

  /**
   * A classic rebalance began: every partition goes (eager). The client fetches the revoked partitions until it
   * joins again: the stream stops fetching meanwhile.
   */
  private rebalanceBegan(): void {
    this.stream?.pause();
    this.rebalancing = true;
    this.commits.rebalanceBegan();
    this.revoke(this.feeds.partitions());
    this.dropRequests(this.requests?.owned() ?? []);
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

  /** Compares the client's assignment with the partitions owned here: revokes what went, assigns what came. */
  private sync(): void {
    const assignments = this.consumer?.assignments;
    // In a classic rebalance the client's assignment is the one revoked until it joins again: nothing comes.
    if (this.closing || this.rebalancing || assignments === null || assignments === undefined) return;
    const of = (topic: string) => new Set(assignments.filter((a) => a.topic === topic).flatMap((a) => a.partitions));
    const now = of(this.request.topic);
    if (this.requests !== undefined) {
      const owned = of(this.requests.topic);
      this.positions.remember(this.requests.topic, this.requests.sync(owned));
      this.positions.reseek(this.stream?.offsetsToFetch, this.requests.topic, [...owned]);
    }
    const gone = this.feeds.partitions().filter((p) => !now.has(p));
    const come = [...now].filter((p) => !this.feeds.has(p));
    if (gone.length > 0) this.revoke(gone);
    if (come.length > 0 || (this.joined !== undefined && this.settledEmpty())) this.assign(come);
  }

  /**
   * Whether a member with no partitions yet may start with none. Under the classic protocol the join tells.
   * Under the consumer protocol the broker assigns partitions with heartbeats after the join (once their
   * previous owners let them go): the start waits for some, for {@link EMPTY_BEATS} heartbeats at most (a
   * member of a group with more members than partitions gets none).
   */
  private settledEmpty(): boolean {
    return this.settings.groupProtocol !== 'consumer' || this.beats >= EMPTY_BEATS;
  }

  private assign(partitions: number[]): void {
    this.joins++;
    this.positions.reseek(this.stream?.offsetsToFetch, this.request.topic, partitions);
    const feeds = this.feeds.add(partitions);
    const take = async (): Promise<void> => {
      if (partitions.length > 0) await this.request.onAssign?.(partitions);
    };
    void this.revoking
      .then(take)
      .catch((error: unknown) => this.log.error('the app could not take its new partitions', { partitions, error }))
      .finally(() => {
        this.feeds.taken(feeds);
        this.request.onReadable();
        this.requests?.kickAll();
      });
    if (this.settings.groupProtocol === 'consumer' && partitions.length > 0) void this.placeUnread(partitions);
    // `start()` resolves once the first assignment arrived, as the kafkajs adapter's does; its `onAssign` settles
    // meanwhile (the partitions are handed out after it), with the consumer known to the app.
    const joined = this.joined;
    this.joined = undefined;
    joined?.();
    this.log.debug('kafka assignment', { group: this.request.group, topic: this.request.topic, partitions });
  }

  /**
   * Partitions a heartbeat assigned (the consumer protocol) that the client's own offset refresh left without a
   * fetch position get one (see {@link placeUnread}), and the stream is set fetching again.
   */
  private async placeUnread(partitions: number[]): Promise<void> {
    const stream = this.stream;
    if (stream === undefined) return;
    const current = (): boolean => this.stream === stream && !this.closing;
    const placed = await placeUnread(
      {
        admin: this.admin,
        group: this.request.group,
        topic: this.request.topic,
        partitions: () => Math.max(this.growth.count, ...partitions.map((p) => p + 1)),
        fromBeginning: this.settings.fromBeginning,
        fetching: () => (current() ? stream.offsetsToFetch : undefined),
        owned: (p) => this.feeds.has(p),
        again: async (attempt) => {
          if (!current()) return false;
          await pauseAfter(attempt, SYSTEM_CLOCK);
          return current();
        },
      },
      partitions,
    );
    if (!placed || !current()) return;
    this.log.debug('kafka assignment: positions set where the client had none', { partitions });
    // The client's fetch loop stops when its offset refresh fails: a resume after a pause starts it again.
    stream.pause();
    stream.resume();
  }

  private revoke(partitions: number[]): void {
    const { feeds, resumes } = this.feeds.remove(partitions);
    if (feeds.length === 0) return;
    // Should a partition come back, it is read again from where it resumes (see `reseek`).
    this.positions.remember(this.request.topic, resumes);
    const settle = async (): Promise<void> => {
      try {
        await this.request.onRevoke(partitions);
        await this.commits.flush();
      } finally {
        this.feeds.settled(feeds);
        this.sessionChanged.wake();
      }
    };
    this.revoking = this.revoking
      .then(settle, settle)
      .catch((error: unknown) => this.log.warn('revoke failed', { error }));
    this.sessionChanged.wake();
  }

  /** Lets the requests topic's `partitions` go (with the topic's, in a classic rebalance or at close). */
  private dropRequests(partitions: number[]): void {
    if (this.requests === undefined) return;
    this.positions.remember(this.requests.topic, this.requests.drop(partitions));
  }

  /**
   * After a classic rebalance, before the stream fetches again: what it fetched before is dropped (those
   * partitions were revoked), the finished work is committed, and every partition of the new assignment is read
   * from the group's committed offset; where the group has none, from where this member's reading of it resumes
   * (see `reseek`) or where the client stands, else from the start or the end (`fromBeginning`). The client
   * refreshes none of its positions at an eager rejoin: it would read a partition it kept from past what the app
   * dropped at the revoke, and one it never read with no position at all. A failure to learn the offsets
   * restarts the consumer, which reads them.
   */
  private async resumeAfterJoin(rejoin: number): Promise<void> {
    const stream = this.stream;
    const consumer = this.consumer;
    if (stream === undefined || consumer === undefined) return;
    const at = new Map<string, bigint>();
    try {
      await this.commits.flush();
      const parts = {
        admin: this.admin,
        group: this.request.group,
        partitions: this.growth.count,
        fromBeginning: this.settings.fromBeginning,
      };
      for (const topic of [this.request.topic, ...(this.requests ? [this.requests.topic] : [])]) {
        const assigned = (consumer.assignments ?? []).filter((a) => a.topic === topic).flatMap((a) => a.partitions);
        for (const [key, offset] of await this.positions.afterRejoin(parts, stream.offsetsToFetch, topic, assigned))
          at.set(key, offset);
      }
      // A fetch sent before the rebalance answers from the old positions, and moves them when it lands.
      await fetchesLanded(consumer, this.settings.rebalanceTimeoutMs);
    } catch (error) {
      this.log.debug('kafka rejoin: the positions could not be read', { error });
      if (this.consumer === consumer && !this.closing && this.rejoins === rejoin) this.restarts.crashed(error as Error);
      return;
    }
    // A later rebalance began, or its join came: that join's positions are read afresh, and it resumes the stream.
    if (this.stream !== stream || this.closing || this.rebalancing || this.rejoins !== rejoin) {
      this.log.debug('kafka rejoin: overtaken', { rebalancing: this.rebalancing, closing: this.closing });
      return;
    }
    this.log.debug('kafka rejoin: reading from', {
      positions: Object.fromEntries([...at].map(([k, v]) => [k, String(v)])),
    });
    // At once, in one turn, with no fetch under way: what the stream fetched before is dropped, the positions are
    // set, and it fetches.
    while (stream.read() !== null);
    for (const [key, offset] of at) stream.offsetsToFetch.set(key, offset);
    this.staleStream = undefined;
    stream.resume();
    this.pull();
  }

  /** Commits the requests topic's `offset` of `partition`; one that fails is committed by a later run. */
  private async commitRequests(partition: number, offset: number, leaderEpoch: number): Promise<void> {
    const topic = this.requests!.topic;
    const offsets = [{ topic, partition, offset: BigInt(offset), leaderEpoch }];
    await this.consumer
      ?.commit({ offsets })
      .catch((error: unknown) => this.log.debug('requests commit not taken', { partition, offset, error }));
  }

  /**
   * True while this member holds `partition` (and no revoke of it is still settling) and the coordinator heard it
   * within a session timeout; else a promise that resolves when that may have changed (a heartbeat answered, a
   * revoke begun or settled, closing). Under the consumer protocol the broker sets the session's length:
   * `consumer.sessionTimeoutMs` should match it.
   */
  inSession(partition: number): true | Promise<void> {
    const heard = heardAt(this.consumer);
    const held = this.feeds.has(partition) && !this.rebalancing && !this.feeds.settling(partition);
    if (held && !this.closing && Date.now() < heard + this.settings.sessionTimeoutMs) return true;
    return this.sessionChanged.next();
  }

  /** Reads what the stream has into the feeds, up to `READ_AHEAD` waiting; the stream holds the rest. */
  private pull(): void {
    this.pulling = false;
    const stream = this.stream;
    if (stream === undefined || this.rebalancing || stream === this.staleStream) return;
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
        this.sync(); // a partition the client assigned before its event reached us
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
    if (this.rebalancing)
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
    return this.joins;
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
      const owned = this.feeds.partitions();
      if (owned.length > 0) this.revoke(owned);
      this.dropRequests(this.requests?.owned() ?? []);
      this.closing = true;
      this.sessionChanged.wake();
      this.commits.joined();
      await close.within(this.revoking);
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
