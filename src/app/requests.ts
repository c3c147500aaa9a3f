import { SluiceError, show } from '../core/errors.js';
import type { InboundMessage, PublishOptions } from '../core/message.js';
import type { Broker, Clock, Consumer, Timer } from '../core/ports.js';
import { CORRELATION_HEADER, REPLY_KEY_HEADER, REPLY_TO_HEADER } from '../core/reply-headers.js';

/**
 * How the requests of an app have fared since `start()`: sent, answered, timed out, and replies that came
 * after their request had timed out (dropped).
 *
 * @category Publishing
 */
export interface RequestCounts {
  /** Requests published. */
  sent: number;
  /** Requests whose reply came in time. */
  replied: number;
  /** Requests that got no reply within their `timeoutMs` (`REQUEST_TIMEOUT`). */
  timedOut: number;
  /** Replies that came after their request timed out (or after the app stopped waiting): dropped. */
  late: number;
}

/** What the requests of one broker are made with. */
export interface RequestsParts {
  readonly broker: Broker;
  /** The topic every instance of the app reads its replies on (`AppOptions.replyTopic`). */
  readonly replyTopic: string;
  /** The app's name: the replies' group is `<name>.replies.<instance>`. */
  readonly name: string;
  /** This instance's ID: its replies are keyed with it, and it reads only those. */
  readonly instance: string;
  readonly clock: Clock;
  readonly uuid: () => string;
  readonly shutdownTimeoutMs: number;
  /** Publishes a request through the app's publish middlewares and tracing. */
  publish(topic: string, value: unknown, options: PublishOptions): Promise<void>;
}

interface Waiting {
  readonly resolve: (reply: InboundMessage) => void;
  readonly reject: (error: unknown) => void;
  readonly timer: Timer;
}

/**
 * The requests of an app on one broker (`app.request`): each is published with the reply topic, this
 * instance's ID and a correlation ID in its headers; the subscriber that `replies` publishes its answer there,
 * keyed with the instance. Each instance reads the reply topic in a group of its own, joined at its first
 * request, from the topic's end (nothing older is read), and deleted when it leaves (no group per request).
 * A reply whose request has timed out, or that no request of this instance waits for, is dropped; the late
 * ones are counted.
 */
export class Requests {
  readonly counts: RequestCounts = { sent: 0, replied: 0, timedOut: 0, late: 0 };
  private replies: Consumer | undefined;
  private joining: Promise<void> | undefined;
  private readonly waiting = new Map<string, Waiting>();
  /** Correlation IDs of requests that timed out, whose replies are counted late (the most recent 10,000). */
  private readonly expired = new Set<string>();
  private closed = false;

  constructor(private readonly parts: RequestsParts) {}

  /**
   * Publishes `value` on `topic` as a request and resolves with its reply, or rejects with `REQUEST_TIMEOUT`
   * after `timeoutMs`, `APP_STATE` when the app stops first, or what the publish rejected with.
   */
  async request(topic: string, value: unknown, options: PublishOptions, timeoutMs: number): Promise<InboundMessage> {
    await this.ready();
    if (this.closed) throw stopped(topic);
    const { parts } = this;
    const id = parts.uuid();
    const reply = new Promise<InboundMessage>((resolve, reject) => {
      const timer = parts.clock.setTimer(timeoutMs, () => this.expire(id, topic, timeoutMs));
      this.waiting.set(id, { resolve, reject, timer });
    });
    reply.catch(() => {}); // a publish that fails is told instead
    const headers = {
      ...options.headers,
      [REPLY_TO_HEADER]: parts.replyTopic,
      [REPLY_KEY_HEADER]: parts.instance,
      [CORRELATION_HEADER]: id,
    };
    try {
      await parts.publish(topic, value, { ...options, headers });
    } catch (error) {
      this.waiting.get(id)?.timer.cancel();
      this.waiting.delete(id);
      throw error;
    }
    this.counts.sent++;
    return reply;
  }

  /** Rejects the requests still waiting (`APP_STATE`) and leaves the replies' group. */
  async close(deadline?: Promise<void>): Promise<void> {
    this.closed = true;
    for (const [, w] of this.waiting) {
      w.timer.cancel();
      w.reject(new SluiceError('APP_STATE', 'app.request: the app stopped before the reply came'));
    }
    this.waiting.clear();
    await this.joining?.catch(() => {});
    await this.replies?.close(deadline);
  }

  /** Joins the replies' group once (again after a join that failed). */
  private ready(): Promise<void> {
    this.joining ??= this.join().catch((error: unknown) => {
      this.joining = undefined;
      throw error;
    });
    return this.joining;
  }

  private async join(): Promise<void> {
    const { broker, replyTopic, name, instance, shutdownTimeoutMs } = this.parts;
    this.replies = await broker.consume({
      topic: replyTopic,
      group: `${name}.replies.${instance}`,
      fromEnd: true,
      forgetOnClose: true,
      onReadable: () => this.read(),
      onRevoke: async () => {},
      shutdownTimeoutMs,
    });
    this.read();
  }

  private read(): void {
    const consumer = this.replies;
    if (consumer === undefined) return;
    for (let batch = consumer.take(256); batch.length > 0; batch = consumer.take(256))
      for (const m of batch) {
        this.answer(m);
        consumer.commit(m.partition, m.offset + 1);
      }
  }

  private answer(message: InboundMessage): void {
    // Every instance reads every reply: another's is not even looked at.
    if (message.key !== this.parts.instance) return;
    const id = message.headers[CORRELATION_HEADER];
    if (id === undefined) return;
    const w = this.waiting.get(id);
    if (w === undefined) {
      if (this.expired.delete(id)) this.counts.late++;
      return;
    }
    this.waiting.delete(id);
    w.timer.cancel();
    this.counts.replied++;
    w.resolve(message);
  }

  private expire(id: string, topic: string, timeoutMs: number): void {
    const w = this.waiting.get(id);
    if (w === undefined) return;
    this.waiting.delete(id);
    this.counts.timedOut++;
    this.expired.add(id);
    if (this.expired.size > 10_000) this.expired.delete(this.expired.values().next().value!);
    w.reject(
      new SluiceError(
        'REQUEST_TIMEOUT',
        `app.request(${show(topic)}): no reply within ${timeoutMs} ms (request ${id}); is a subscriber of ${show(topic)} marked .replies() running?`,
      ),
    );
  }
}

function stopped(topic: string): SluiceError {
  return new SluiceError('APP_STATE', `app.request(${show(topic)}): the app is stopping`);
}
