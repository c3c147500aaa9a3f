import { ERROR_CODES, SluiceError, show, type ErrorCode } from '../core/errors.js';
import { utf8, type Headers, type InboundMessage, type RawHeaders } from '../core/message.js';
import type { Broker, Clock, ConsumeRequest, Consumer, Logger, Timer } from '../core/ports.js';
import type { Receipt } from '../pace/rules.js';
import { checkKey, eventJson, type Appended } from './pace-event.js';
import type { Pacer } from './pacer.js';
import type { ControlOp } from './pace-control.js';

/** What {@link SendRouting} works with. */
export interface SendRoutingParts {
  /** The paced subscriber, and its consumer group (the replies' group is named after it). */
  readonly subscriber: string;
  readonly group: string;
  readonly broker: Broker;
  readonly pacer: Pacer;
  /** The store's topics (see `Store.routes`). */
  readonly routes: { readonly requests: string; readonly replies: string };
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a routed send waits for its answer: the app's `sendTimeoutMs`. */
  readonly timeoutMs: number;
  /** How long closing the replies' consumer may take. */
  readonly shutdownTimeoutMs: number;
  /** Makes this instance's name and the requests' IDs. */
  readonly uuid: () => string;
  /**
   * Told of a forwarded delivery that pace dropped (the instance that read it only forwarded it), when the app
   * has metrics.
   */
  readonly observer?: { handled(outcome: 'dropped'): void } | undefined;
  /** The app's tracing, when it has tracing: requests carry the trace context, and runs link to it. */
  readonly tracing?: RouteTracing | undefined;
}

/** What routing asks of the app's tracing (see `AppTracing`). */
export interface RouteTracing {
  /** The headers of the span active now (where `app.send` is called), or undefined when none is. */
  activeHeaders(): RawHeaders | undefined;
  /** The headers of the trace context `headers` carry (a forwarded delivery's), or undefined when they carry none. */
  headersOf(headers: Headers): RawHeaders | undefined;
  /** An event that came with `headers` joined a run here: the run's span links to their trace context. */
  joined(receipt: Receipt, headers: Headers): void;
  /** For an `app.send` appended here: what links the run its event joins to the span active where it was called. */
  sending(): ((receipt: Receipt) => void) | undefined;
}

/**
 * A request on the requests topic: which instance sent it, and the start; or, with `op`, an action or view on
 * the shard of the partition it was published to (`key` is then the key it is about, if any).
 */
interface Request {
  readonly id: string;
  readonly from: string;
  readonly key: string;
  readonly event?: unknown;
  readonly eventId?: string;
  readonly op?: ControlOp;
}

/** An answer on the replies topic: the receipt, an op's result, or why the start (or op) was refused. */
type Reply =
  | { readonly id: string; readonly receipt: Receipt }
  | { readonly id: string; readonly result: unknown }
  | { readonly id: string; readonly error: { readonly code: string; readonly message: string } };

interface Waiting {
  resolve(answer: Receipt | { readonly result: unknown }): void;
  reject(error: unknown): void;
  readonly timer: Timer;
}

/** Why a start was not recorded here when the key's partition has just moved: it goes to the new owner. */
const MOVED: ReadonlySet<ErrorCode> = new Set(['SHARD_NOT_OWNED', 'STORE_FENCED']);

/** Refusals the owner answers (the start can never be taken); anything else leaves the request for later. */
const ANSWERED: ReadonlySet<ErrorCode> = new Set(['SEND_INVALID']);
/** Refusals of a control op the owner answers (a bad query, say); anything else leaves the request for later. */
const OP_ANSWERED: ReadonlySet<ErrorCode> = new Set(['SEND_INVALID', 'CONFIG_INVALID', 'UNKNOWN_SUBSCRIBER']);

/**
 * `app.send` to a paced subscriber whose store is owned by partition, from any instance of the app. A key
 * whose partition this instance owns is appended here; any other is published to the requests topic, at the
 * key's partition, whose owner — the group member that owns that partition of the subscriber's topic, which
 * reads the requests beside it — appends it and publishes the receipt to the replies topic. The owner
 * takes the requests it read together: appended at once (one transaction of the shard's log), each answered
 * once durable, the replies published together. Each instance reads every reply, in a consumer group of its
 * own joined at start from the topic's end, and takes those of its requests. A request is committed only
 * once answered: one that finds its shard being handed over waits, uncommitted (with those after it), for
 * the partition's next owner; one handed twice is appended once (by its event ID, or by its offset when it
 * has none).
 */
export class SendRouting {
  /** This instance's name, which its requests carry. */
  private readonly from: string;
  private replies: Consumer | undefined;
  private readonly waiting = new Map<string, Waiting>();
  private closed = false;

  constructor(private readonly parts: SendRoutingParts) {
    this.from = parts.uuid();
  }

  /** What the subscriber's consumer reads beside its topic (see `ConsumeRequest.requests`). */
  get requests(): NonNullable<ConsumeRequest['requests']> {
    return { topic: this.parts.routes.requests, handle: (p, messages) => this.handle(p, messages) };
  }

  /**
   * The requests topic has a partition per shard (checked once the subscriber's consumer joined: a broker may
   * create it then), else `CONFIG_INVALID`: its partition p would not go with the subscriber's partition p.
   */
  async check(): Promise<void> {
    const { broker, routes, pacer } = this.parts;
    const count = await broker.partitionCount?.(routes.requests);
    if (count !== undefined && count !== pacer.shards)
      throw new SluiceError(
        'CONFIG_INVALID',
        `subscriber ${show(this.parts.subscriber)}: the requests topic ${show(routes.requests)} has ${count} partitions, got a store of ${pacer.shards} shards (it needs one partition per partition of the subscriber's topic)`,
      );
  }

  /**
   * The store keeps its topics on the broker's cluster, where the subscriber's group member reads the requests
   * beside its topic, else `CONFIG_INVALID` (checked before anything joins; a broker or store that cannot tell is
   * taken at its word).
   */
  async checkCluster(): Promise<void> {
    const { broker, pacer, subscriber, routes } = this.parts;
    const [brokers, stores] = await Promise.all([broker.clusterId?.(), pacer.clusterId()]);
    if (brokers === undefined || stores === undefined || brokers === stores) return;
    throw new SluiceError(
      'CONFIG_INVALID',
      `subscriber ${show(subscriber)}: the store keeps its topics (${show(routes.requests)} among them) on Kafka cluster ${show(stores)}, and the subscriber reads cluster ${show(brokers)}; give the store the brokers of the subscriber's cluster, where its requests are read beside the subscriber's topic`,
    );
  }

  /** Joins the replies' group of this instance; resolves once joined (before any send is routed). */
  async start(): Promise<void> {
    const { broker, routes, group } = this.parts;
    this.replies = await broker.consume({
      topic: routes.replies,
      group: `${group}.replies.${this.from}`,
      fromEnd: true,
      forgetOnClose: true,
      onReadable: () => this.readReplies(),
      onRevoke: async () => {},
      shutdownTimeoutMs: this.parts.shutdownTimeoutMs,
    });
    this.readReplies();
  }

  /** Appends the start here if this instance owns the key's partition, else routes it to the owner. */
  async send(appended: Appended): Promise<Receipt> {
    const { pacer, subscriber } = this.parts;
    const partition = pacer.partitionOf(subscriber, appended.key);
    if (partition === undefined || pacer.owns(partition)) {
      try {
        return await pacer.append(subscriber, appended, this.parts.tracing?.sending());
      } catch (error) {
        // Not recorded: the shard is being handed over, or its next owner has opened it already (fenced).
        if (partition === undefined || !moved(error)) throw error;
      }
    }
    return this.route(partition, appended);
  }

  /**
   * A delivery whose pace key (a `key` function's, not the message's) lands in another partition than the
   * delivery's: its event is published to the requests topic at the key's partition, for that partition's
   * owner, with an event ID naming the delivery (so that a delivery read again, before its offset was
   * committed, is taken once); resolves once published. Undefined when the key's partition is the
   * delivery's: the event is appended here.
   */
  forward(key: string, message: InboundMessage, event: unknown): Promise<void> | undefined {
    const { pacer, subscriber, broker, routes } = this.parts;
    const partition = pacer.partitionOf(subscriber, key);
    if (partition === undefined || partition === message.partition) return undefined;
    checkKey(subscriber, key);
    const eventId = `sluice.delivery:${message.topic}/${message.partition}@${message.offset}`;
    // No reply: what is acknowledged is the delivery, once its event is on the requests topic.
    const request: Request = { id: eventId, from: '', key, event: eventJson(event), eventId };
    const headers = this.parts.tracing?.headersOf(message.headers);
    return broker.publish(routes.requests, request, { key, partition, ...(headers ? { headers } : {}) });
  }

  /** Rejects the sends still waiting (`APP_STATE`) and leaves the replies' group. */
  async close(deadline?: Promise<void>): Promise<void> {
    this.closed = true;
    for (const [id, w] of this.waiting) {
      w.timer.cancel();
      w.reject(
        new SluiceError(
          'APP_STATE',
          `subscriber ${show(this.parts.subscriber)}: the app stopped before the owner of the key's partition answered send ${id}; the event may or may not have been recorded, and sending it again with the same eventId is safe`,
        ),
      );
    }
    this.waiting.clear();
    await this.replies?.close(deadline);
  }

  private async route(partition: number, appended: Appended): Promise<Receipt> {
    const { subscriber, timeoutMs } = this.parts;
    checkKey(subscriber, appended.key);
    const event = eventJson(appended.event);
    const request = { from: this.from, key: appended.key, event, ...eventIdOf(appended) };
    const timedOut = (): SluiceError =>
      new SluiceError(
        'SEND_TIMEOUT',
        `subscriber ${show(subscriber)}: key ${show(appended.key.slice(0, 40))} is in partition ${partition}, owned by another instance, which did not answer within sendTimeoutMs (${timeoutMs} ms); the event may or may not have been recorded, and sending it again with the same eventId is safe`,
      );
    const headers = this.parts.tracing?.activeHeaders(); // the owner's run links to the sender's span
    return (await this.ask(partition, request, timedOut, headers)) as Receipt;
  }

  /**
   * Runs `op` at the owner of `partition` (here, if this instance owns it), resolving with its answer (see
   * `PaceControl.runAt`); `key` is the key it is about, if any. `SEND_TIMEOUT` when the owner did not answer
   * within `sendTimeoutMs`.
   */
  async control(partition: number, op: ControlOp, key = ''): Promise<unknown> {
    const { pacer, subscriber, timeoutMs } = this.parts;
    if (pacer.owns(partition)) return pacer.control.runAt(subscriber, partition, op);
    const timedOut = (): SluiceError =>
      new SluiceError(
        'SEND_TIMEOUT',
        `subscriber ${show(subscriber)}: partition ${partition} is owned by another instance, which did not answer ${op.kind} within sendTimeoutMs (${timeoutMs} ms)`,
      );
    const answer = await this.ask(partition, { from: this.from, key, op }, timedOut, undefined);
    return (answer as { result: unknown }).result;
  }

  /** Publishes `request` to `partition` of the requests topic and waits for its answer, until `sendTimeoutMs`. */
  private async ask(
    partition: number,
    request: Omit<Request, 'id'>,
    timedOut: () => SluiceError,
    headers: RawHeaders | undefined,
  ): Promise<Receipt | { readonly result: unknown }> {
    const { broker, routes, clock, timeoutMs, subscriber } = this.parts;
    if (this.closed) throw new SluiceError('APP_STATE', `subscriber ${show(subscriber)}: the app is stopping`);
    const id = this.parts.uuid();
    const answered = new Promise<Receipt | { readonly result: unknown }>((resolve, reject) => {
      const timer = clock.setTimer(
        timeoutMs,
        () => {
          this.waiting.delete(id);
          reject(timedOut());
        },
        { keepAlive: true },
      );
      this.waiting.set(id, { resolve, reject, timer });
    });
    try {
      const key = request.key === '' ? {} : { key: request.key };
      await broker.publish(routes.requests, { id, ...request }, { ...key, partition, ...(headers ? { headers } : {}) });
    } catch (error) {
      this.waiting.get(id)?.timer.cancel();
      this.waiting.delete(id);
      throw error;
    }
    return answered;
  }

  /**
   * Owner side: appends a run of requests (consecutive, of partition `partition` of the requests topic) and
   * answers them; resolves with how many of them, from the first, were handled (see `ConsumeRequest.requests`).
   * Every request is appended in this turn, in offset order — so their records share one transaction of the
   * shard's log (its group commit), and a request that repeats an earlier one's event ID is that one's
   * duplicate — and answered once its record is durable; the replies are published together.
   */
  private async handle(partition: number, messages: readonly InboundMessage[]): Promise<number> {
    const answers = await Promise.allSettled(messages.map((m) => this.take(partition, m)));
    const handled = answers.findIndex((a) => a.status === 'rejected');
    // Answered even past one that was not handled: their records are durable, and the next owner, which
    // reads them again, takes them once (a duplicate, answered again).
    const replies = answers.flatMap((a) => (a.status === 'fulfilled' && a.value !== undefined ? [a.value] : []));
    const { broker, routes } = this.parts;
    await Promise.all(replies.map(([from, reply]) => broker.publish(routes.replies, reply, { key: from })));
    return handled < 0 ? messages.length : handled;
  }

  /**
   * Appends one request, at once (its record is applied now, in call order); resolves once it is durable
   * with the reply for its sender, none for a forward or a message that is not a request. Rejects — the
   * request is not handled — when the start was not recorded and may be later (its shard is not here now).
   */
  private take(partition: number, message: InboundMessage): Promise<[string, Reply] | undefined> {
    const { pacer, subscriber, routes, log } = this.parts;
    const request = requestOf(message);
    if (request === undefined) {
      log.warn('pace: a message of the requests topic that is not a request is skipped', {
        topic: routes.requests,
        partition,
        offset: message.offset,
      });
      return Promise.resolve(undefined);
    }
    const { id, from, key, event, eventId, op } = request;
    if (op !== undefined)
      return pacer.control.runAt(subscriber, partition, op).then(
        (result): [string, Reply] => [from, { id, result }],
        (error: unknown): [string, Reply] => {
          if (!(error instanceof SluiceError && OP_ANSWERED.has(error.code))) throw error; // not here now: handed again
          return [from, { id, error: { code: error.code, message: error.message } }];
        },
      );
    // Without an event ID, a request handed twice (a rebalance) is recognised by its offset.
    const source = { topic: routes.requests, partition, offset: message.offset };
    const tracing = this.parts.tracing;
    // A run that leaves here links to the sender's context.
    const joined = tracing && ((receipt: Receipt) => tracing.joined(receipt, message.headers));
    const appended = pacer.append(
      subscriber,
      eventId !== undefined ? { key, event, eventId } : { key, event, source },
      joined,
    );
    const replied = appended.then(
      (receipt): Reply => ({ id, receipt }),
      (error: unknown): Reply => {
        if (!(error instanceof SluiceError && ANSWERED.has(error.code))) throw error; // not committed: handed again
        return { id, error: { code: error.code, message: error.message } };
      },
    );
    if (from === '')
      // A forward: no reply. The delivery reached no handler when pace dropped it: counted here, where that is known.
      return replied.then((reply) => {
        if ('receipt' in reply && reply.receipt.kind === 'dropped') this.parts.observer?.handled('dropped');
        return undefined;
      });
    return replied.then((reply) => [from, reply]);
  }

  /** Takes every reply fetched, answering the sends of this instance that wait for one. */
  private readReplies(): void {
    const consumer = this.replies;
    if (consumer === undefined) return;
    for (let batch = consumer.take(256); batch.length > 0; batch = consumer.take(256))
      for (const m of batch) {
        this.answer(m);
        consumer.commit(m.partition, m.offset + 1);
      }
  }

  private answer(message: InboundMessage): void {
    // A reply is keyed by the instance it answers: another's is not even read (every instance reads them all).
    if (message.key !== undefined && message.key !== this.from) return;
    let reply: Reply;
    try {
      reply = JSON.parse(utf8(message.value)) as Reply;
    } catch {
      return;
    }
    const w = typeof reply?.id === 'string' ? this.waiting.get(reply.id) : undefined;
    if (w === undefined) return; // another instance's, or answered already
    this.waiting.delete(reply.id);
    w.timer.cancel();
    if ('result' in reply) return w.resolve({ result: reply.result });
    // An instance of a release before `dropped: true` answers a dropped start `{ kind: 'dropped' }` alone.
    if ('receipt' in reply)
      return w.resolve(reply.receipt.kind === 'dropped' ? { kind: 'dropped', dropped: true } : reply.receipt);
    const code = (ERROR_CODES as readonly string[]).includes(reply.error?.code)
      ? (reply.error.code as ErrorCode)
      : 'SEND_INVALID';
    w.reject(new SluiceError(code, String(reply.error?.message)));
  }
}

/** True for a refusal in `MOVED`, or a failed shard whose log was fenced (what failed it was not recorded). */
function moved(error: unknown): boolean {
  if (!(error instanceof SluiceError)) return false;
  return MOVED.has(error.code) || (error.cause instanceof SluiceError && error.cause.code === 'STORE_FENCED');
}

const eventIdOf = (a: Appended): { eventId?: string } => (a.eventId === undefined ? {} : { eventId: a.eventId });

/** A request as the requests topic holds it, or undefined for a message that is not one. */
function requestOf(message: InboundMessage): Request | undefined {
  try {
    const r = JSON.parse(utf8(message.value)) as Partial<Request> | null;
    if (r === null || typeof r !== 'object') return undefined;
    if (typeof r.id !== 'string' || typeof r.from !== 'string' || typeof r.key !== 'string') return undefined;
    if (r.eventId !== undefined && (typeof r.eventId !== 'string' || r.eventId === '')) return undefined;
    return r as Request;
  } catch {
    return undefined;
  }
}
