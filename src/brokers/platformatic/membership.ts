import type { Admin, Consumer as PkConsumer, MessagesStream } from '@platformatic/kafka';
import { SystemClock } from '../../core/clock.js';
import type { ConsumeRequest, Logger } from '../../core/ports.js';
import { Waiters } from '../../core/waiters.js';
import { pauseAfter } from '../kafka/catching-up.js';
import type { FeedCommits } from './commits.js';
import type { Feeds } from './feeds.js';
import { pk } from './client.js';
import { fetchesLanded } from './fetches.js';
import { heardAt } from './heard.js';
import { placeUnread, type ResumePositions } from './positions.js';
import type { RequestFeeds } from './requests.js';
import type { PlatformaticSettings } from './settings.js';
import type { TopicGrowth } from './topic-growth.js';

/** Heartbeats a new member of a consumer-protocol group waits for partitions before it starts with none. */
const EMPTY_BEATS = 4;

const SYSTEM_CLOCK = new SystemClock();

/** What a {@link GroupMembership} works with: the member's parts it shares with its `PlatformaticConsumer`. */
export interface MembershipParts {
  readonly admin: Admin;
  readonly request: ConsumeRequest;
  readonly settings: PlatformaticSettings;
  readonly log: Logger;
  /** The partitions handed out to the app, taken, and let go. */
  readonly feeds: Feeds;
  /** Where the reading of each partition let go resumes, should it come back. */
  readonly positions: ResumePositions;
  /** The partitions of the requests topic this member owns, if the request names one. */
  readonly requests: RequestFeeds | undefined;
  /** The group's offsets of the feeds, committed up to what the app finished. */
  readonly commits: FeedCommits;
  /** The topic's partition count. */
  readonly growth: TopicGrowth;
  /** The member's client consumer now (replaced when its stream fails), if any. */
  consumer(): PkConsumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** That consumer's messages stream, once it has one. */
  stream(): MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  closing(): boolean;
  /** Reads what the stream has into the feeds. */
  pull(): void;
  /** The consumer failed: it is opened again (see `CrashRestarts`). */
  crashed(error: Error): void;
}

/** Kafka's codes, from the client's table, of the heartbeat errors {@link memberGone} looks for. */
const GONE_CODES: ReadonlySet<unknown> = new Set(
  ['UNKNOWN_MEMBER_ID', 'FENCED_MEMBER_EPOCH'].map((id) => pk.protocolErrors[id]!.code),
);

/**
 * Whether a heartbeat's error says the coordinator no longer counts the member (consumer protocol): it does not know
 * its member ID (UNKNOWN_MEMBER_ID: the session ended and the member was removed) or fenced its epoch
 * (FENCED_MEMBER_EPOCH). Its partitions are others' by now.
 */
export function memberGone(error: unknown): boolean {
  return GONE_CODES.has((error as { response?: { errorCode?: unknown } } | undefined)?.response?.errorCode);
}

/**
 * What a member of a Kafka consumer group owns of its topic (and of its requests topic), as the client's group
 * events tell it, and the revokes and assignments that follow.
 *
 * Partitions are tracked by comparing the client's assignment after each join and heartbeat: under the
 * consumer protocol (KIP-848) only the partitions that move are revoked and assigned, and a partition that
 * stays is neither drained nor read again. Under the classic protocol a rebalance revokes everything first
 * (eager). The client waits for no revoke: the app settles what it ran of a revoked partition and commits it
 * while the partition may already be read by its next owner (what was not committed is read again there).
 */
export class GroupMembership {
  private revoking: Promise<void> = Promise.resolve();
  private joins = 0;
  /** Classic rejoins after a rebalance: a {@link resumeAfterJoin} overtaken by a later one leaves the stream to it. */
  private rejoins = 0;
  private joined: (() => void) | undefined;
  /**
   * A classic rebalance began, or the consumer failed and is opened again, and the join has not come yet:
   * what this member will own is unknown.
   */
  private awaitingJoin = false;
  /**
   * The stream after a classic join, until its positions are set again: what it holds was fetched from the
   * positions before the rebalance, and admitted into the new feeds it would pass over what the app dropped.
   */
  private staleStream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** Heartbeats answered: under the consumer protocol, partitions come with heartbeats after the join. */
  private beats = 0;
  /** Woken when `inSession` may answer otherwise: a heartbeat answered, a revoke, closing. */
  private readonly sessionChanged = new Waiters();
  private readonly classic: boolean;

  constructor(private readonly parts: MembershipParts) {
    this.classic = parts.settings.groupProtocol !== 'consumer';
  }

  /** How many assignments came (the first, even with no partitions, and each that brought some). */
  get assignments(): number {
    return this.joins;
  }

  /** A classic rebalance, or a restart, is under way: what the member will own is unknown until it joins. */
  get rebalancing(): boolean {
    return this.awaitingJoin;
  }

  /** Resolves at the first assignment (`start()` waits for it). */
  firstAssignment(): Promise<void> {
    return new Promise<void>((resolve) => (this.joined = resolve));
  }

  /** Whether what `stream` holds may be read into the feeds: not in a rebalance, and not fetched before one. */
  readable(stream: MessagesStream<Buffer, Buffer, Buffer, Buffer>): boolean {
    return !this.rebalancing && stream !== this.staleStream;
  }

  /**
   * Follows the group events of a new client `consumer`: its joins, heartbeats and rebalances. Those of a
   * consumer replaced since (`current` false) are ignored.
   */
  follow(
    consumer: PkConsumer<Buffer, Buffer, Buffer, Buffer>,
    current: () => boolean,
    lost: (error: Error) => void,
  ): void {
    let joinedBefore = false;
    // The client joins again after a fenced epoch, but asks as the member the coordinator removed (its session
    // ended while the process stalled) forever, holding on to what it was assigned: opened again, as a new member.
    // Either way what it held goes at once, before any heartbeat of a new membership answers.
    consumer.on('consumer:heartbeat:error', (event: { error?: unknown }) => {
      if (current() && !this.classic && memberGone(event.error)) lost(event.error as Error);
    });
    consumer.on('consumer:group:join', () => {
      if (!current()) return;
      // A classic member whose session ended (frozen, cut off) joins again with no rebalance event: what it owned
      // went to others meanwhile, as in a rebalance, and what it read of it is stale.
      if (this.classic && joinedBefore && !this.rebalancing) this.rebalanceBegan();
      joinedBefore = true;
      const paused = this.rebalancing && this.classic;
      // Until `resumeAfterJoin` sets the positions, what the stream holds was fetched from the old ones.
      if (paused) this.staleStream = this.parts.stream();
      this.awaitingJoin = false;
      this.sync();
      this.parts.commits.joined();
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
      if (current() && this.classic) this.rebalanceBegan();
    });
  }

  /** The consumer failed and is opened again: every partition goes. */
  revokeAll(): Promise<void> {
    // Until the new consumer joins, what this member owns is unknown: `lag` asks to be asked again.
    this.awaitingJoin = true;
    this.revoke(this.parts.feeds.partitions());
    return this.revoking;
  }

  /**
   * The member is closing: every partition goes (the requests topic's too), and those waiting on
   * {@link inSession} are woken. Resolves when the revokes settled.
   */
  release(): Promise<void> {
    const owned = this.parts.feeds.partitions();
    if (owned.length > 0) this.revoke(owned);
    this.dropRequests(this.parts.requests?.owned() ?? []);
    this.sessionChanged.wake();
    return this.revoking;
  }

  /**
   * True while this member holds `partition` (and no revoke of it is still settling) and the coordinator heard it
   * within a session timeout; else a promise that resolves when that may have changed (a heartbeat answered, a
   * revoke begun or settled, closing). Under the consumer protocol the broker sets the session's length:
   * `consumer.sessionTimeoutMs` should match it.
   */
  inSession(partition: number): true | Promise<void> {
    const { feeds, settings } = this.parts;
    const heard = heardAt(this.parts.consumer());
    const held = feeds.has(partition) && !this.rebalancing && !feeds.settling(partition);
    if (held && !this.parts.closing() && Date.now() < heard + settings.sessionTimeoutMs) return true;
    return this.sessionChanged.next();
  }

  /** Compares the client's assignment with the partitions owned here: revokes what went, assigns what came. */
  sync(): void {
    const { request, requests, positions, feeds } = this.parts;
    const assignments = this.parts.consumer()?.assignments;
    // In a classic rebalance the client's assignment is the one revoked until it joins again: nothing comes.
    if (this.parts.closing() || this.rebalancing || assignments === null || assignments === undefined) return;
    const of = (topic: string) => new Set(assignments.filter((a) => a.topic === topic).flatMap((a) => a.partitions));
    const now = of(request.topic);
    if (requests !== undefined) {
      const owned = of(requests.topic);
      positions.remember(requests.topic, requests.sync(owned));
      positions.reseek(this.parts.stream()?.offsetsToFetch, requests.topic, [...owned]);
    }
    const gone = feeds.partitions().filter((p) => !now.has(p));
    const come = [...now].filter((p) => !feeds.has(p));
    if (gone.length > 0) this.revoke(gone);
    if (come.length > 0 || (this.joined !== undefined && this.settledEmpty())) this.assign(come);
  }

  /**
   * A classic rebalance began: every partition goes (eager). The client fetches the revoked partitions until it
   * joins again: the stream stops fetching meanwhile.
   */
  private rebalanceBegan(): void {
    this.parts.stream()?.pause();
    this.awaitingJoin = true;
    this.parts.commits.rebalanceBegan();
    this.revoke(this.parts.feeds.partitions());
    this.dropRequests(this.parts.requests?.owned() ?? []);
  }

  /**
   * Whether a member with no partitions yet may start with none. Under the classic protocol the join tells.
   * Under the consumer protocol the broker assigns partitions with heartbeats after the join (once their
   * previous owners let them go): the start waits for some, for {@link EMPTY_BEATS} heartbeats at most (a
   * member of a group with more members than partitions gets none).
   */
  private settledEmpty(): boolean {
    return this.classic || this.beats >= EMPTY_BEATS;
  }

  private assign(partitions: number[]): void {
    const { request, requests, log } = this.parts;
    this.joins++;
    this.parts.positions.reseek(this.parts.stream()?.offsetsToFetch, request.topic, partitions);
    const feeds = this.parts.feeds.add(partitions);
    const take = async (): Promise<void> => {
      if (partitions.length > 0) await request.onAssign?.(partitions);
    };
    void this.revoking
      .then(take)
      .catch((error: unknown) => log.error('the app could not take its new partitions', { partitions, error }))
      .finally(() => {
        this.parts.feeds.taken(feeds);
        request.onReadable();
        requests?.kickAll();
      });
    if (!this.classic && partitions.length > 0) void this.placeUnread(partitions);
    // `start()` resolves once the first assignment arrived, as the kafkajs adapter's does; its `onAssign` settles
    // meanwhile (the partitions are handed out after it), with the consumer known to the app.
    const joined = this.joined;
    this.joined = undefined;
    joined?.();
    log.debug('kafka assignment', { group: request.group, topic: request.topic, partitions });
  }

  /**
   * Partitions a heartbeat assigned (the consumer protocol) that the client's own offset refresh left without a
   * fetch position get one (see {@link placeUnread}), and the stream is set fetching again.
   */
  private async placeUnread(partitions: number[]): Promise<void> {
    const { admin, request, settings } = this.parts;
    const stream = this.parts.stream();
    if (stream === undefined) return;
    const current = (): boolean => this.parts.stream() === stream && !this.parts.closing();
    const placed = await placeUnread(
      {
        admin,
        group: request.group,
        topic: request.topic,
        partitions: () => Math.max(this.parts.growth.count, ...partitions.map((p) => p + 1)),
        fromBeginning: settings.fromBeginning,
        fetching: () => (current() ? stream.offsetsToFetch : undefined),
        owned: (p) => this.parts.feeds.has(p),
        again: async (attempt) => {
          if (!current()) return false;
          await pauseAfter(attempt, SYSTEM_CLOCK);
          return current();
        },
      },
      partitions,
    );
    if (!placed || !current()) return;
    this.parts.log.debug('kafka assignment: positions set where the client had none', { partitions });
    // The client's fetch loop stops when its offset refresh fails: a resume after a pause starts it again.
    stream.pause();
    stream.resume();
  }

  private revoke(partitions: number[]): void {
    const { request, commits } = this.parts;
    const { feeds, resumes } = this.parts.feeds.remove(partitions);
    if (feeds.length === 0) return;
    // Should a partition come back, it is read again from where it resumes (see `reseek`).
    this.parts.positions.remember(request.topic, resumes);
    const settle = async (): Promise<void> => {
      try {
        await request.onRevoke(partitions);
        await commits.flush();
      } finally {
        this.parts.feeds.settled(feeds);
        this.sessionChanged.wake();
      }
    };
    this.revoking = this.revoking
      .then(settle, settle)
      .catch((error: unknown) => this.parts.log.warn('revoke failed', { error }));
    this.sessionChanged.wake();
  }

  /** Lets the requests topic's `partitions` go (with the topic's, in a classic rebalance or at close). */
  private dropRequests(partitions: number[]): void {
    const requests = this.parts.requests;
    if (requests === undefined) return;
    this.parts.positions.remember(requests.topic, requests.drop(partitions));
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
    const { admin, request, requests, settings, positions, log } = this.parts;
    const stream = this.parts.stream();
    const consumer = this.parts.consumer();
    if (stream === undefined || consumer === undefined) return;
    const at = new Map<string, bigint>();
    try {
      await this.parts.commits.flush();
      const offsets = {
        admin,
        group: request.group,
        partitions: this.parts.growth.count,
        fromBeginning: settings.fromBeginning,
      };
      for (const topic of [request.topic, ...(requests ? [requests.topic] : [])]) {
        const assigned = (consumer.assignments ?? []).filter((a) => a.topic === topic).flatMap((a) => a.partitions);
        for (const [key, offset] of await positions.afterRejoin(offsets, stream.offsetsToFetch, topic, assigned))
          at.set(key, offset);
      }
      // A fetch sent before the rebalance answers from the old positions, and moves them when it lands.
      await fetchesLanded(consumer, settings.rebalanceTimeoutMs);
    } catch (error) {
      log.debug('kafka rejoin: the positions could not be read', { error });
      if (this.parts.consumer() === consumer && !this.parts.closing() && this.rejoins === rejoin)
        this.parts.crashed(error as Error);
      return;
    }
    // A later rebalance began, or its join came: that join's positions are read afresh, and it resumes the stream.
    if (this.parts.stream() !== stream || this.parts.closing() || this.rebalancing || this.rejoins !== rejoin) {
      log.debug('kafka rejoin: overtaken', { rebalancing: this.rebalancing, closing: this.parts.closing() });
      return;
    }
    log.debug('kafka rejoin: reading from', {
      positions: Object.fromEntries([...at].map(([k, v]) => [k, String(v)])),
    });
    // At once, in one turn, with no fetch under way: what the stream fetched before is dropped, the positions are
    // set, and it fetches.
    while (stream.read() !== null);
    for (const [key, offset] of at) stream.offsetsToFetch.set(key, offset);
    this.staleStream = undefined;
    stream.resume();
    this.parts.pull();
  }
}
