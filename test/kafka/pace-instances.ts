/**
 * The parts of the multi-process pace scenarios (test/kafka/pace-scenarios*.test.ts) that talk to the
 * children: an instance of the app as a child process (test/fixtures/pace-instance.mjs), what the children
 * print, and the test's stream of numbered events.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { KafkaBroker } from '../../src/brokers/kafka/index.js';

const SCRIPT = fileURLToPath(new URL('../fixtures/pace-instance.mjs', import.meta.url));
export const PARTITIONS = 6;
export const KEYS = 60;
/** The children's session timeout: the least the broker takes by default, so that a death is noticed soon. */
export const SESSION_MS = 6_000;

/** The subscriber's pace in the children (see test/fixtures/pace-instance.mjs). */
export type Mode = 'batch' | 'debounce' | 'payload-key' | 'drop' | 'per-minute';

/** `pace.drop.max` of mode `drop`, and `pace.perMinute` of mode `per-minute`. */
export const DROP_MAX = 3;
export const PER_MINUTE = 2;

/** What `app.send` resolved with in a child. */
export type SentReceipt =
  | { readonly kind: 'run'; readonly runId: string; readonly duplicate: boolean }
  | { readonly kind: 'dropped'; readonly dropped: true };

/** A line a child printed (see test/fixtures/pace-instance.mjs). */
export interface Line {
  readonly ev: 'ready' | 'own' | 'release' | 'start' | 'end' | 'fail' | 'receipt' | 'refused' | 'stopped';
  readonly i: string;
  readonly pid: number;
  readonly shard?: number;
  readonly run?: string;
  readonly key?: string;
  readonly seqs?: number[];
  readonly size?: number;
  readonly attempt?: number;
  /** Monotonic microseconds (process.hrtime), comparable across the processes of this machine. */
  readonly t?: number;
  /** The app's clock (milliseconds since the epoch) at a run line. */
  readonly now?: number;
  /** The send command a receipt or refused line answers, and what it answered. */
  readonly send?: number;
  readonly receipt?: SentReceipt;
  readonly code?: string;
  readonly message?: string;
}

export type RunLine = Line & Required<Pick<Line, 'run' | 'key' | 'seqs' | 'size' | 'attempt' | 't' | 'now'>>;

/** A start for `app.send` in a child. */
export interface SendCommand {
  readonly key: string;
  readonly event: unknown;
  readonly eventId: string;
}

/** How a send through a child ended: its receipt, its refusal, or nothing (the child exited first). */
export type SendResult =
  | { readonly kind: 'receipt'; readonly receipt: SentReceipt }
  | { readonly kind: 'refused'; readonly code: string; readonly message: string }
  | { readonly kind: 'lost' };

export const micros = (): number => Number(process.hrtime.bigint() / 1000n);
export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything the children of one scenario printed, in the order it arrived; and a way to wait on it. */
export class Output {
  readonly lines: Line[] = [];
  private wake: () => void = () => {};
  private next = new Promise<void>((resolve) => (this.wake = resolve));

  push(line: Line): void {
    this.lines.push(line);
    this.wake();
    this.next = new Promise<void>((resolve) => (this.wake = resolve));
  }

  /** Resolves at the next line, or after `ms` (for conditions on the broker's state). */
  lineOr(ms: number): Promise<void> {
    return Promise.race([this.next, pause(ms)]);
  }
}

/** A child process: one instance of the app. */
export class Instance {
  readonly child: ChildProcess;
  readonly lines: Line[] = [];
  /** When it exited (micros), for the runs it was in when killed. */
  exitedAt: number | undefined;
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly sends = new Map<number, (result: SendResult) => void>();
  private sent = 0;

  constructor(
    readonly id: string,
    args: readonly string[],
    output: Output,
    /** The client of the child's broker: `kafkajs`, or @platformatic/kafka's `classic` or `consumer` protocol. */
    client = 'kafkajs',
  ) {
    this.child = spawn(process.execPath, [SCRIPT, ...args.slice(0, 5), id, String(SESSION_MS), ...args.slice(5)], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, SLUICE_TEST_KAFKA_CLIENT: client },
    });
    this.child.stdin!.on('error', () => {}); // a command written as the child dies: its send is lost
    let buffer = '';
    this.child.stdout!.on('data', (d: Buffer) => {
      buffer += d.toString();
      const parts = buffer.split('\n');
      buffer = parts.pop()!;
      for (const part of parts) this.take(JSON.parse(part) as Line, output);
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        this.exitedAt = micros();
        for (const answer of this.sends.values()) answer({ kind: 'lost' });
        this.sends.clear();
        resolve({ code, signal });
        output.push({ ev: 'stopped', i: id, pid: -1 }); // wakes the waits; not one of the child's lines
      }),
    );
  }

  get alive(): boolean {
    return this.exitedAt === undefined;
  }

  has(ev: Line['ev']): boolean {
    return this.lines.some((l) => l.ev === ev);
  }

  /** The shards it holds now, by its own/release lines. */
  owned(): Set<number> {
    const shards = new Set<number>();
    for (const l of this.lines) {
      if (l.ev === 'own') shards.add(l.shard!);
      if (l.ev === 'release') shards.delete(l.shard!);
    }
    return shards;
  }

  /** `app.send('ev', command)` in the child: resolves with its receipt or refusal, or `lost` if it exits first. */
  send(command: SendCommand): Promise<SendResult> {
    if (!this.alive) return Promise.resolve({ kind: 'lost' });
    const n = this.sent++;
    const result = new Promise<SendResult>((resolve) => this.sends.set(n, resolve));
    this.child.stdin!.write(JSON.stringify({ send: n, ...command }) + '\n');
    return result;
  }

  private take(line: Line, output: Output): void {
    this.lines.push(line);
    output.push(line);
    const answer = line.send === undefined ? undefined : this.sends.get(line.send);
    if (answer === undefined) return;
    this.sends.delete(line.send!);
    if (line.ev === 'receipt') answer({ kind: 'receipt', receipt: line.receipt! });
    else answer({ kind: 'refused', code: line.code ?? '', message: line.message ?? '' });
  }
}

/** What a {@link Stream} publishes. */
export interface StreamOptions {
  /** The message key of key `k`'s event `seq` (the pace key is the event's `key` field): `k<k>` unless given. */
  readonly messageKey?: (k: number, seq: number) => string;
  /** At most this many events a key (the stream publishes nothing once every key has them). */
  readonly perKey?: number;
  /** The pause after each 3 events (one each of 3 keys). @default 20 */
  readonly pauseMs?: number;
}

/** The test's stream of events: for each key, events numbered 0, 1, 2… in the order they are published. */
export class Stream {
  readonly next = new Array<number>(KEYS).fill(0);
  produced = 0;
  /** `Date.now()` before the first publish: no run of the stream's events started earlier. */
  readonly startedAt = Date.now();
  private running = true;
  private readonly done: Promise<void>;
  /** While held: resolves on `resume()`. */
  private held: { resumed: Promise<void>; resume: () => void } | undefined;

  constructor(broker: KafkaBroker, topic: string, options: StreamOptions = {}) {
    const messageKey = options.messageKey ?? ((k: number) => `k${k}`);
    const perKey = options.perKey ?? Infinity;
    const pauseMs = options.pauseMs ?? 20;
    this.done = (async () => {
      while (this.running) {
        await this.held?.resumed;
        const open = this.next.flatMap((n, k) => (n < perKey ? [k] : []));
        const keys = new Set<number>();
        while (keys.size < Math.min(3, open.length)) keys.add(open[Math.floor(Math.random() * open.length)]!);
        // One publish per key at a time: a key's events reach its partition in order (under its own key).
        await Promise.all(
          [...keys].map((k) => {
            const seq = this.next[k]!++;
            return broker.publish(topic, { key: `k${k}`, seq }, { key: messageKey(k, seq) });
          }),
        );
        this.produced += keys.size;
        await pause(pauseMs); // the stream's pace, not a wait for anything
      }
    })();
  }

  /** Publishes nothing more until `resume()` (once what is being published is). */
  hold(): void {
    let resume = (): void => {};
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    this.held ??= { resumed, resume };
  }

  resume(): void {
    this.held?.resume();
    this.held = undefined;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.resume();
    await this.done;
  }
}
