import type { CompiledPace } from '../pace/config.js';
import { MARK, pauseKey, RELEASE } from '../pace/rules.js';
import type { PaceHost } from './shard-placement.js';

/** `release` records appended per turn of the event loop at most while a wake goes on. */
const WAKE_CHUNK = 1_000;

/** A key waiting to be woken: its head run's order, the runs it started in this wake, its place in line. */
interface InLine {
  readonly key: string;
  readonly order: number;
  readonly turns: number;
  readonly seq: number;
}

/**
 * Whether `a` goes before `b`: the higher order first; with `turns`, among equal orders the key that started
 * fewer runs in this wake; then the key that began waiting first.
 */
const before = (a: InLine, b: InLine, turns: boolean): boolean =>
  a.order !== b.order ? a.order > b.order : turns && a.turns !== b.turns ? a.turns < b.turns : a.seq < b.seq;

/** A binary heap of the keys in line, the next to go at the top. */
class Line {
  private readonly heap: InLine[] = [];
  constructor(private readonly turns: boolean) {}
  get size(): number {
    return this.heap.length;
  }
  push(k: InLine): void {
    const h = this.heap;
    h.push(k);
    for (let i = h.length - 1; i > 0;) {
      const up = (i - 1) >> 1;
      if (!before(h[i]!, h[up]!, this.turns)) break;
      [h[i], h[up]] = [h[up]!, h[i]!];
      i = up;
    }
  }
  pop(): InLine {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!, this.turns)) m = l;
        if (r < h.length && before(h[r]!, h[m]!, this.turns)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** Whether `subscriber` is paused in the host's shard. */
export const pausedIn = (host: PaceHost, subscriber: string): boolean =>
  host.core.marked('', MARK.paused).has(pauseKey(subscriber));

/**
 * Wakes the keys of `subscriber` in the shard whose runs wait (those without a timer only, with `untimed`: after
 * a restart, the keys that a resume cut short may not have been woken): appends a `release` record to each, so
 * that their runs start as far as their rate lets. Where the subscriber has `order` or `turns`, the runs start
 * one by one across the keys, highest order first and, with `turns`, keys taking turns among equal orders;
 * else each key starts all its runs, keys in the order they began waiting. Stops if the subscriber is paused
 * again or the shard stops serving; resolves once every record appended is durable.
 */
export async function wakeWaiting(
  host: PaceHost,
  subscriber: string,
  pace: CompiledPace,
  untimed = false,
): Promise<void> {
  const core = host.core;
  let keys = [...core.marked(subscriber, MARK.waiting)];
  if (untimed) keys = keys.filter((k) => core.timerOf(k) === undefined);
  const appended: Promise<unknown>[] = [];
  const live = (): boolean => host.phase === 'serving' && !pausedIn(host, subscriber);
  const release = (key: string, max?: number): void => {
    appended.push(host.append(max === undefined ? { key, type: RELEASE } : { key, type: RELEASE, data: max }));
  };
  if (pace.order === undefined && pace.turns !== true) {
    for (let i = 0; i < keys.length && live(); i++) {
      release(keys[i]!);
      if (i % WAKE_CHUNK === WAKE_CHUNK - 1) await nextTurn();
    }
  } else {
    const line = new Line(pace.turns === true);
    keys.forEach((key, seq) => {
      const head = core.state(key)?.waiting[0];
      if (head !== undefined) line.push({ key, order: head.order, turns: 0, seq });
    });
    for (let n = 1; line.size > 0 && live(); n++) {
      const k = line.pop();
      const waited = core.state(k.key)?.waiting.length ?? 0;
      release(k.key, 1);
      const waiting = core.state(k.key)?.waiting ?? [];
      // A key its rate held stays out of line: its timer starts its runs when the rate lets it.
      if (waiting.length > 0 && waiting.length < waited)
        line.push({ key: k.key, order: waiting[0]!.order, turns: k.turns + 1, seq: k.seq });
      if (n % WAKE_CHUNK === 0) await nextTurn();
    }
  }
  await Promise.all(appended);
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
