import { ERROR_HEADER, rawOf, type InboundMessage, type RawHeaders } from '../core/message.js';
import { SluiceError, show } from '../core/errors.js';
import type { Broker } from '../core/ports.js';
import { STRIPPED_HEADER } from '../pipeline/dead-letters.js';

/**
 * One dead letter, as `app.inspectDeadLetters` shows it.
 *
 * @category Inspect
 */
export interface DeadLetterView {
  /** Its partition in the dead-letter topic. */
  readonly partition: number;
  /** Its offset there, as a decimal string. */
  readonly offset: string;
  /** The message's key, as text. */
  readonly key?: string;
  /** Why it was dead-lettered (its `x-sluice-error` header). */
  readonly reason: string;
  /** The topic it came from. */
  readonly sourceTopic: string;
  /** Its partition there. */
  readonly sourcePartition?: number;
  /** Its offset there, as a decimal string. */
  readonly sourceOffset?: string;
  /** The attempts made at it. */
  readonly attempts?: number;
  /** When the dead-letter topic took it, in milliseconds since the epoch. */
  readonly timestamp: number;
  /** Its value as UTF-8 text, its first 1,000 characters. */
  readonly value: string;
  /** Sent without its value and headers (the broker refused it whole): it cannot be replayed. */
  readonly stripped: boolean;
  /** Replayed already (`app.replayDeadLetters`): a replay skips it. */
  readonly replayed: boolean;
}

/**
 * A page of dead letters, oldest first, partition after partition.
 *
 * @category Inspect
 */
export interface DeadLetterPage {
  /** The page's letters. */
  readonly letters: readonly DeadLetterView[];
  /** Pass as `after` for the next page; absent on the last one. */
  readonly next?: string;
}

/**
 * Which dead letters `app.inspectDeadLetters` lists.
 *
 * @category Inspect
 */
export interface DeadLetterQuery {
  /** One partition of the dead-letter topic only. @default every one */
  readonly partition?: number;
  /** Where the page starts: the `next` of the page before. */
  readonly after?: string;
  /** Letters per page at most: 1 to 1000. @default 50 */
  readonly limit?: number;
}

/**
 * Which dead letters `app.replayDeadLetters` replays: those of `partition` (or of every one) from `fromOffset`
 * to `toOffset` (both included), that `filter` keeps, `limit` at most.
 *
 * @category Inspect
 */
export interface ReplayOptions {
  /** One partition of the dead-letter topic. @default every one */
  readonly partition?: number;
  /** @default the partition's start */
  readonly fromOffset?: string | number;
  /** @default the partition's end */
  readonly toOffset?: string | number;
  /** Letters replayed at most (those skipped do not count): 1 to 100,000. @default 1000 */
  readonly limit?: number;
  /** Keeps a letter to replay; asked of every letter in range. */
  readonly filter?: (letter: DeadLetterView) => boolean;
}

/**
 * What a replay did.
 *
 * @category Inspect
 */
export interface ReplayResult {
  /** Letters published again to the topic they came from. */
  readonly replayed: number;
  /** Letters in range replayed before: not published again. */
  readonly skipped: number;
  /** Letters in range sent stripped of their value: they cannot be replayed. */
  readonly unreplayable: number;
  /** Letters read. */
  readonly scanned: number;
}

/** The header a replayed message carries: `<dead-letter topic>/<partition>/<offset>` of its letter. */
export const REPLAY_HEADER = 'x-sluice-replay-of';

/** The topic that records which letters of `topic` were replayed: keyed `<partition>/<offset>`. */
export const replayedTopic = (deadLetterTopic: string): string => `${deadLetterTopic}.replayed`;

/** Sluice's headers on a dead letter: a replay takes them off. */
const DEAD_LETTER_HEADERS = new Set([
  ERROR_HEADER,
  'x-sluice-original-topic',
  'x-sluice-original-partition',
  'x-sluice-original-offset',
  'x-sluice-attempts',
]);

const text = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : Array.isArray(v) ? text(v[v.length - 1]) : undefined;

/** A dead letter as a view. */
function viewOf(m: InboundMessage, replayed: ReadonlySet<string>): DeadLetterView {
  const h = m.headers as Record<string, unknown>;
  const sourcePartition = Number(text(h['x-sluice-original-partition']));
  const attempts = Number(text(h['x-sluice-attempts']));
  const sourceOffset = text(h['x-sluice-original-offset']);
  return {
    partition: m.partition,
    offset: String(m.offset),
    ...(m.key !== undefined ? { key: m.key } : {}),
    reason: text(h[ERROR_HEADER]) ?? '',
    sourceTopic: text(h['x-sluice-original-topic']) ?? '',
    ...(Number.isInteger(sourcePartition) ? { sourcePartition } : {}),
    ...(sourceOffset !== undefined ? { sourceOffset } : {}),
    ...(Number.isInteger(attempts) ? { attempts } : {}),
    timestamp: m.timestamp,
    value: Buffer.from(m.value).toString('utf8').slice(0, 1_000),
    stripped: h[STRIPPED_HEADER] !== undefined,
    replayed: replayed.has(`${m.partition}/${m.offset}`),
  };
}

/** The replay under way on each broker: one at a time, since two at once would both find a letter not replayed yet. */
const running = new WeakMap<Broker, Promise<unknown>>();

/** The dead letters of a subscriber: read, paged and replayed through its broker. */
export class DeadLetterTopic {
  constructor(
    private readonly broker: Broker,
    private readonly topic: string,
    private readonly who: string,
  ) {}

  /** A page of letters, oldest first. */
  async page(query: DeadLetterQuery): Promise<DeadLetterPage> {
    const limit = this.limit(query.limit, 1_000, 50, 'limit');
    const [fromPartition, fromOffset] = this.cursor(query.after);
    const replayed = await this.replayed();
    const letters: DeadLetterView[] = [];
    for (const p of await this.partitions(query.partition)) {
      if (p < fromPartition) continue;
      let next = p === fromPartition ? fromOffset : 0;
      let full = false;
      await this.read(p, next, (m) => {
        if (letters.length >= limit) return !(full = true);
        letters.push(viewOf(m, replayed));
        next = m.offset + 1;
        return true;
      });
      if (full) return { letters, next: JSON.stringify([p, next]) };
    }
    return { letters };
  }

  /** Publishes the letters in range to the topics they came from, each once ever (see {@link ReplayOptions}). */
  async replay(options: ReplayOptions): Promise<ReplayResult> {
    const before = running.get(this.broker) ?? Promise.resolve();
    const mine = before.catch(() => {}).then(() => this.replayNow(options));
    running.set(this.broker, mine);
    return mine;
  }

  private async replayNow(options: ReplayOptions): Promise<ReplayResult> {
    const limit = this.limit(options.limit, 100_000, 1_000, 'limit');
    const from = this.offset(options.fromOffset, 'fromOffset') ?? 0;
    const to = this.offset(options.toOffset, 'toOffset') ?? Number.POSITIVE_INFINITY;
    if (options.filter !== undefined && typeof options.filter !== 'function')
      throw this.bad('filter', options.filter, 'a function');
    const replayed = await this.replayed();
    const record = replayedTopic(this.topic);
    if ((await this.broker.partitionCount?.(record)) === 0) await this.broker.createTopic?.(record, 1);
    const letters: InboundMessage[] = [];
    let scanned = 0;
    let skipped = 0;
    let unreplayable = 0;
    for (const p of await this.partitions(options.partition)) {
      if (letters.length >= limit) break;
      await this.read(p, from, (m) => {
        if (m.offset > to || letters.length >= limit) return false;
        scanned++;
        const view = viewOf(m, replayed);
        if (view.replayed) skipped++;
        else if (view.stripped || view.sourceTopic === '') unreplayable++;
        else if (options.filter === undefined || options.filter(view)) letters.push(m);
        return true;
      });
    }
    for (const m of letters) await this.publishAgain(m);
    return { replayed: letters.length, skipped, unreplayable, scanned };
  }

  /**
   * Records the letter as replayed, then publishes it to its topic: a crash between the two loses its replay
   * (it shows as replayed), and never makes it run twice. A publish refused takes the record back.
   */
  private async publishAgain(m: InboundMessage): Promise<void> {
    const raw = rawOf(m);
    const id = `${m.partition}/${m.offset}`;
    const record = replayedTopic(this.topic);
    await this.broker.publish(record, { replayed: true }, { key: id });
    const headers: Record<string, RawHeaders[string]> = {};
    for (const [name, value] of Object.entries(raw.headers)) if (!DEAD_LETTER_HEADERS.has(name)) headers[name] = value;
    headers[REPLAY_HEADER] = `${this.topic}/${id}`;
    const source = text((m.headers as Record<string, unknown>)['x-sluice-original-topic'])!;
    try {
      await this.broker.publish(source, raw.value ?? new Uint8Array(), {
        ...(raw.key !== null ? { key: raw.key } : {}),
        headers,
        tombstone: raw.value === null,
      });
    } catch (error) {
      await this.broker.publish(record, { replayed: false }, { key: id });
      throw error;
    }
  }

  /** The letters replayed so far (`<partition>/<offset>`): the last record of each key says. */
  private async replayed(): Promise<Set<string>> {
    const topic = replayedTopic(this.topic);
    const out = new Set<string>();
    const count = (await this.broker.partitionCount?.(topic)) ?? 1;
    for (let p = 0; p < count; p++)
      await this.broker.readTopic!(topic, p, 0, (m) => {
        const yes = (JSON.parse(Buffer.from(m.value).toString('utf8')) as { replayed?: boolean }).replayed === true;
        if (m.key !== undefined) {
          if (yes) out.add(m.key);
          else out.delete(m.key);
        }
        return true;
      });
    return out;
  }

  private read(partition: number, from: number, visit: (m: InboundMessage) => boolean): Promise<void> {
    return this.broker.readTopic!(this.topic, partition, from, visit);
  }

  private async partitions(only: number | undefined): Promise<number[]> {
    const count = (await this.broker.partitionCount?.(this.topic)) ?? 1;
    if (only === undefined) return Array.from({ length: count }, (_, i) => i);
    if (!(Number.isInteger(only) && only >= 0 && only < count))
      throw this.bad('partition', only, `an integer from 0 to ${count - 1}`);
    return [only];
  }

  private limit(value: number | undefined, max: number, fallback: number, field: string): number {
    if (value === undefined) return fallback;
    if (!(Number.isInteger(value) && value >= 1 && value <= max))
      throw this.bad(field, value, `an integer from 1 to ${max}`);
    return value;
  }

  private offset(value: string | number | undefined, field: string): number | undefined {
    if (value === undefined) return undefined;
    const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
    if (!(typeof n === 'number' && Number.isSafeInteger(n) && n >= 0))
      throw this.bad(field, value, 'an offset (an integer from 0)');
    return n;
  }

  private cursor(after: string | undefined): [number, number] {
    if (after === undefined) return [0, 0];
    try {
      const c = JSON.parse(after) as unknown;
      if (Array.isArray(c) && c.length === 2 && c.every((x) => Number.isSafeInteger(x) && (x as number) >= 0))
        return c as [number, number];
    } catch {
      // told below
    }
    throw this.bad('after', after, 'the next of a page');
  }

  private bad(field: string, value: unknown, what: string): SluiceError {
    return new SluiceError('CONFIG_INVALID', `${this.who}: ${field} must be ${what}, got ${show(value)}`);
  }
}
