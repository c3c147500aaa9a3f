/**
 * A small model of the pace rules (src/pace/rules.ts), written from their documented behaviour and kept
 * obviously right rather than fast: every start time is kept and counted by a filter, waiting starts are
 * picked by a scan, remembered IDs live in a Map with their expiry. Property tests feed it the records they
 * feed a real core and compare what each answers, puts out, when it wakes and whether it still holds the key.
 */
import type { CompiledPace } from '../../src/pace/config.js';
import type { PaceOutput, PaceReply } from '../../src/pace/rules.js';

/** An `event` record's data, as the host journals it. */
export interface ModelEventData {
  readonly e: unknown;
  readonly r: string;
  readonly id?: string;
  readonly src?: string;
  readonly off?: number;
  readonly o?: number;
}

interface Gathered {
  readonly id: string;
  events: unknown[];
  size: number;
  order: number;
}

interface Waiting extends Gathered {
  /** When it joined the waiting ones: equal orders go in this order. */
  readonly seq: number;
}

interface KeyModel {
  window?: Gathered & { readonly first: number; due: number };
  waiting: Waiting[];
  /** IDs of runs started and not done, oldest first. */
  running: string[];
  /** When every run of the key started (rates only). */
  starts: number[];
  /** Remembered event IDs: the run each joined (`''`: dropped), and when it is forgotten. */
  ids: Map<string, { readonly run: string; readonly until: number }>;
  /** The last offset per broker source, all forgotten at `offsetsUntil`. */
  offsets: Map<string, number>;
  offsetsUntil?: number;
}

export type ModelRecord =
  | { readonly type: 'event'; readonly data: ModelEventData }
  | { readonly type: 'timer' }
  | { readonly type: 'done'; readonly run: string };

export class PaceModel {
  private readonly keys = new Map<string, KeyModel>();
  private seq = 0;

  constructor(private readonly paces: ReadonlyMap<string, CompiledPace>) {}

  /** Applies one record of `sub`'s key `key` at `at`: returns its reply (if any) and what it puts out. */
  apply(sub: string, key: string, at: number, record: ModelRecord): { reply?: PaceReply; out: PaceOutput[] } {
    const pace = this.paces.get(sub)!;
    const k = this.key(sub, key);
    const out: PaceOutput[] = [];
    // Time passing: IDs and offsets age out, a due window closes, waiting starts go as the rate allows.
    for (const [id, { until }] of k.ids) if (until <= at) k.ids.delete(id);
    if (k.offsetsUntil !== undefined && k.offsetsUntil <= at) {
      k.offsets = new Map();
      k.offsetsUntil = undefined;
    }
    if (k.window !== undefined && k.window.due <= at) this.close(k);
    this.release(sub, key, k, pace, at, out);
    let reply: PaceReply | undefined;
    if (record.type === 'event') reply = this.event(sub, key, k, pace, at, record.data, out);
    else if (record.type === 'done') k.running = k.running.filter((id) => id !== record.run);
    return reply === undefined ? { out } : { reply, out };
  }

  /** Applies a shard record of the pace rules' vocabulary (its key a coordinator key). */
  applyRecord(r: { readonly key: string; readonly at: number; readonly type: string; readonly data?: unknown }): {
    reply?: PaceReply;
    out: PaceOutput[];
  } {
    const [sub, key] = r.key.split('\u0000') as [string, string];
    const record: ModelRecord =
      r.type === 'event'
        ? { type: 'event', data: r.data as ModelEventData }
        : r.type === 'done'
          ? { type: 'done', run: r.data as string }
          : { type: 'timer' };
    return this.apply(sub, key, r.at, record);
  }

  /** When the key's coordinator must wake (its state changes by time alone), as of the last record at `at`. */
  timer(sub: string, key: string, at: number): number | undefined {
    const k = this.keys.get(`${sub}/${key}`);
    if (k === undefined) return undefined;
    const rate = this.paces.get(sub)!.rate;
    const times: number[] = [];
    if (k.window !== undefined) times.push(k.window.due);
    for (const { until } of k.ids.values()) times.push(until);
    if (k.offsetsUntil !== undefined) times.push(k.offsetsUntil);
    if (rate !== undefined) {
      const live = k.starts.filter((t) => t + rate.perMs > at);
      if (live.length > 0) times.push(live[live.length - 1]! + rate.perMs); // the rate's history is gone
      if (k.waiting.length > 0 && live.length >= rate.max) times.push(live[live.length - rate.max]! + rate.perMs); // a waiting start may go
    }
    return times.length === 0 ? undefined : Math.min(...times);
  }

  /** True when the key holds anything at `at`: a window, waiting or running starts, a rate's history, remembered IDs or offsets. */
  holds(sub: string, key: string, at: number): boolean {
    const k = this.keys.get(`${sub}/${key}`);
    if (k === undefined) return false;
    const rate = this.paces.get(sub)!.rate;
    return (
      k.window !== undefined ||
      k.waiting.length > 0 ||
      k.running.length > 0 ||
      k.ids.size > 0 ||
      k.offsets.size > 0 ||
      (rate !== undefined && k.starts.some((t) => t + rate.perMs > at))
    );
  }

  /** Run IDs of the key that started and are not done, oldest first. */
  running(sub: string, key: string): readonly string[] {
    return this.keys.get(`${sub}/${key}`)?.running ?? [];
  }

  private key(sub: string, key: string): KeyModel {
    let k = this.keys.get(`${sub}/${key}`);
    if (k === undefined)
      this.keys.set(
        `${sub}/${key}`,
        (k = { waiting: [], running: [], starts: [], ids: new Map(), offsets: new Map() }),
      );
    return k;
  }

  private close(k: KeyModel): void {
    const { id, events, size, order } = k.window!;
    k.window = undefined;
    k.waiting.push({ id, events, size, order, seq: this.seq++ });
  }

  /** How many runs of the key started within the rate's period before `at`. */
  private startedInPeriod(k: KeyModel, pace: CompiledPace, at: number): number {
    const rate = pace.rate;
    return rate === undefined ? 0 : k.starts.filter((t) => t + rate.perMs > at).length;
  }

  private allowed(k: KeyModel, pace: CompiledPace, at: number): boolean {
    return pace.rate === undefined || this.startedInPeriod(k, pace, at) < pace.rate.max;
  }

  /** The waiting starts in the order they go: highest order first, then the earliest to wait. */
  private byTurn(k: KeyModel): Waiting[] {
    return [...k.waiting].sort((a, b) => b.order - a.order || a.seq - b.seq);
  }

  private release(sub: string, key: string, k: KeyModel, pace: CompiledPace, at: number, out: PaceOutput[]): void {
    while (k.waiting.length > 0 && this.allowed(k, pace, at)) {
      const next = this.byTurn(k)[0]!;
      k.waiting = k.waiting.filter((w) => w !== next);
      k.running.push(next.id);
      k.starts.push(at);
      out.push({
        subscriber: sub,
        key,
        id: next.id,
        events: next.events,
        size: next.size,
        startedAt: at,
        order: next.order,
      });
    }
  }

  private event(
    sub: string,
    key: string,
    k: KeyModel,
    pace: CompiledPace,
    at: number,
    data: ModelEventData,
    out: PaceOutput[],
  ): PaceReply {
    const remember = (run: string): void => {
      if (data.id !== undefined) k.ids.set(data.id, { run, until: at + pace.dedupMs });
      else if (data.src !== undefined) {
        k.offsets.set(data.src, data.off!);
        k.offsetsUntil = at + pace.dedupMs;
      }
    };
    // Seen before: a remembered ID, or a broker offset not past the last one of its source.
    if (data.id !== undefined && k.ids.has(data.id)) {
      const run = k.ids.get(data.id)!.run;
      return run === '' ? { kind: 'dropped', dropped: true } : { kind: 'run', runId: run, duplicate: true };
    }
    if (
      data.id === undefined &&
      data.src !== undefined &&
      k.offsets.has(data.src) &&
      data.off! <= k.offsets.get(data.src)!
    ) {
      const latest = k.window?.id ?? this.byTurn(k).at(-1)?.id ?? k.running.at(-1) ?? '';
      return { kind: 'run', runId: latest, duplicate: true };
    }
    const opensRun = pace.kind === 'each' || k.window === undefined;
    if (pace.rate?.drop === true && opensRun && !this.allowed(k, pace, at)) {
      out.push({ subscriber: sub, key, dropped: true, at, ...(data.id !== undefined ? { eventId: data.id } : {}) });
      remember('');
      return { kind: 'dropped', dropped: true };
    }
    const order = data.o ?? 0;
    const fresh = `${key}@${data.r}`;
    if (pace.kind === 'each') {
      remember(fresh);
      k.waiting.push({ id: fresh, events: [data.e], size: 1, order, seq: this.seq++ });
      this.release(sub, key, k, pace, at, out);
      return { kind: 'run', runId: fresh, duplicate: false };
    }
    if (pace.kind === 'debounce') {
      // The latest start's event and order; the window ends `windowMs` after it, but no later than `maxWaitMs` after the first.
      const first = k.window?.first ?? at;
      const due = Math.min(at + pace.windowMs, first + (pace.maxWaitMs ?? Number.POSITIVE_INFINITY));
      k.window = { id: k.window?.id ?? fresh, first, due, events: [data.e], size: (k.window?.size ?? 0) + 1, order };
    } else if (k.window === undefined) {
      k.window = { id: fresh, first: at, due: at + pace.waitMs, events: [data.e], size: 1, order };
    } else {
      // Every event, and the highest order of them.
      k.window.events = [...k.window.events, data.e];
      k.window.size++;
      k.window.order = Math.max(k.window.order, order);
    }
    const id = k.window.id;
    remember(id);
    if (pace.kind === 'batch' && k.window.size >= pace.max) {
      this.close(k);
      this.release(sub, key, k, pace, at, out);
    }
    return { kind: 'run', runId: id, duplicate: false };
  }
}
