import { SluiceError, show } from '../core/errors.js';
import type { CompiledPace } from '../pace/config.js';
import { coordinatorKey, MARK, type PaceState } from '../pace/rules.js';
import type { PendingRun } from '../pace/state.js';
import type { PaceHost } from './shard-placement.js';
import { pausedIn } from './wake.js';

/**
 * One shard of a paced subscriber, as `app.inspect()` tells it: counts only, read without decoding any
 * key's state.
 *
 * @category Inspect
 */
export interface PaceShardInspection {
  /** The shard's number (under a store owned by partition, its partition's). */
  readonly shard: number;
  /** The subscriber is paused in this shard: its runs wait. */
  readonly paused: boolean;
  /** Keys gathering a window (`debounce`, `batch`). */
  readonly openWindows: number;
  /** Runs ready to start that wait: for their rate, or for the pause. */
  readonly waitingStarts: number;
  /** Keys with runs out: started, and their end not yet recorded. */
  readonly keysRunning: number;
  /** Idle keys parked in the shard (of every paced subscriber of the shard). */
  readonly parkedKeys: number;
}

/**
 * Where a run is: gathering in its key's open window, waiting to start, or out (started, not yet done).
 *
 * @category Inspect
 */
export type RunStage = 'gathering' | 'waiting' | 'running';

/**
 * What a run not yet started waits for: its window to close (`debounce`, `batch`), its key's rate
 * (`perMinute`), the subscriber's pause, or runs of its key before it (`turn`).
 *
 * @category Inspect
 */
export type WaitingFor = 'debounce' | 'batch' | 'rate' | 'pause' | 'turn';

/**
 * A run as an inspection shows it.
 *
 * @category Inspect
 */
export interface RunView {
  /** `<key>@<uuid>`, as `ctx.run.id` and `app.send`'s receipt name it. */
  readonly runId: string;
  /** Its key. */
  readonly key: string;
  /** The shard of its key. */
  readonly shard: number;
  /** Where it is. */
  readonly stage: RunStage;
  /** How many events it holds (for `debounce`, how many it collapsed). */
  readonly events: number;
  /** Its order (`pace.order`), 0 without one. */
  readonly order: number;
  /** When its window opened (`gathering`). */
  readonly openedAt?: number;
  /** When its window closes (`gathering`). */
  readonly closesAt?: number;
  /** When it started (`running`). */
  readonly startedAt?: number;
  /** What it waits for (`gathering`, `waiting`). */
  readonly waitingFor?: WaitingFor;
}

/**
 * One key's coordinator, as `app.inspectKey` tells it.
 *
 * @category Inspect
 */
export interface KeyInspection {
  /** The paced subscriber. */
  readonly subscriber: string;
  /** The key. */
  readonly key: string;
  /** The shard of the key. */
  readonly shard: number;
  /** Its runs: the open window's, those waiting (in the order they go), those out. */
  readonly runs: readonly RunView[];
  /** When its last runs started, while they count against its rate (`perMinute`, `drop`). */
  readonly recentStarts: readonly number[];
  /** Event IDs (and broker partitions) it remembers, to answer a second send of one as a duplicate. */
  readonly remembered: number;
  /** When its timer fires next, if it has one. */
  readonly timerAt?: number;
}

/**
 * A page of runs, newest first.
 *
 * @category Inspect
 */
export interface RunPage {
  /** The page's runs. */
  readonly runs: readonly RunView[];
  /** Pass as `after` for the next page; absent on the last one. */
  readonly next?: string;
}

/**
 * Which runs `app.inspectRuns` lists.
 *
 * @category Inspect
 */
export interface RunQuery {
  /** The stage listed. @default 'gathering' */
  readonly stage?: RunStage;
  /** One shard only. @default every shard, one after another */
  readonly shard?: number;
  /** Where the page starts: the `next` of the page before. */
  readonly after?: string;
  /** Runs per page at most (a key's runs are never split between pages): 1 to 1000. @default 50 */
  readonly limit?: number;
}

const STAGE_MARK: Readonly<Record<RunStage, number>> = {
  gathering: MARK.window,
  waiting: MARK.waiting,
  running: MARK.running,
};

/** A shard's counts for `subscriber`. */
export function shardInspection(host: PaceHost, subscriber: string): PaceShardInspection {
  const core = host.core;
  const [openWindows = 0, waitingStarts = 0] = core.tallies.get(subscriber) ?? [];
  return {
    shard: host.shard,
    paused: pausedIn(host, subscriber),
    openWindows,
    waitingStarts,
    keysRunning: core.marked(subscriber, MARK.running).size,
    parkedKeys: core.parkedCount,
  };
}

/** The runs of one key's state in `stage`, as views. */
function runsIn(
  state: PaceState,
  stage: RunStage | undefined,
  at: { key: string; shard: number; pace: CompiledPace | undefined; paused: boolean; now: number },
): RunView[] {
  const { key, shard } = at;
  const out: RunView[] = [];
  const view = (r: PendingRun, s: RunStage): RunView => ({
    runId: r.runId,
    key,
    shard,
    stage: s,
    events: r.size,
    order: r.order,
  });
  if ((stage === undefined || stage === 'gathering') && state.stage === 'gathering') {
    const w = state.window;
    const waitingFor: WaitingFor = at.pace?.kind === 'debounce' ? 'debounce' : 'batch';
    out.push({ ...view(w, 'gathering'), openedAt: w.openedAt, closesAt: w.closesAt, waitingFor });
  }
  if (stage === undefined || stage === 'waiting') {
    const rate = at.pace?.rate;
    const held = rate !== undefined && state.history.filter((t) => t + rate.perMs > at.now).length >= rate.max;
    state.waiting.forEach((r, i) => {
      const waitingFor: WaitingFor = at.paused ? 'pause' : held ? 'rate' : i > 0 ? 'turn' : 'rate';
      out.push({ ...view(r, 'waiting'), waitingFor });
    });
  }
  if (stage === undefined || stage === 'running')
    for (const r of state.running) out.push({ ...view(r, 'running'), startedAt: r.startedAt });
  return out;
}

/** One key's coordinator in `host`, or undefined when it holds nothing. */
export function keyInspection(
  host: PaceHost,
  subscriber: string,
  key: string,
  pace: CompiledPace | undefined,
): KeyInspection | undefined {
  const ck = coordinatorKey(subscriber, key);
  const state = host.core.state(ck);
  if (state === undefined) return undefined;
  const at = { key, shard: host.shard, pace, paused: pausedIn(host, subscriber), now: host.now() };
  const timerAt = host.core.timerOf(ck);
  return {
    subscriber,
    key,
    shard: host.shard,
    runs: runsIn(state, undefined, at),
    recentStarts: state.history,
    remembered: (state.idOrder?.length ?? 0) - (state.idHead ?? 0) + Object.keys(state.seen ?? {}).length,
    ...(timerAt !== undefined ? { timerAt } : {}),
  };
}

/** The most runs a page lists. */
export const MAX_PAGE = 1_000;

/** A cursor: the shard and the coordinator key a page ended at. */
function cursorOf(after: string | undefined): [number, string] | undefined {
  if (after === undefined) return undefined;
  try {
    const c = JSON.parse(after) as unknown;
    if (Array.isArray(c) && c.length === 2 && Number.isInteger(c[0]) && typeof c[1] === 'string')
      return c as [number, string];
  } catch {
    // told below
  }
  throw new SluiceError('CONFIG_INVALID', `inspectRuns: after must be the next of a page, got ${show(after)}`);
}

/**
 * A page of `subscriber`'s runs in `stage` over `hosts` (in shard order), newest first within a shard: keys
 * in the reverse of the order they took the stage. Decodes only the states of the keys on the page (and
 * lists the keys of the stage to find where it starts). A page after one whose last key has left the stage
 * starts again at the shard's newest.
 */
export function runPage(
  hosts: readonly PaceHost[],
  subscriber: string,
  pace: CompiledPace | undefined,
  query: RunQuery,
): RunPage {
  const stage = query.stage ?? 'gathering';
  const limit = query.limit ?? 50;
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= MAX_PAGE))
    throw new SluiceError(
      'CONFIG_INVALID',
      `inspectRuns: limit must be an integer from 1 to ${MAX_PAGE}, got ${show(limit)}`,
    );
  if (STAGE_MARK[stage] === undefined)
    throw new SluiceError(
      'CONFIG_INVALID',
      `inspectRuns: stage must be gathering, waiting or running, got ${show(stage)}`,
    );
  const cursor = cursorOf(query.after);
  const runs: RunView[] = [];
  const sorted = [...hosts].sort((a, b) => a.shard - b.shard);
  for (const host of sorted) {
    if (query.shard !== undefined && host.shard !== query.shard) continue;
    if (cursor !== undefined && host.shard < cursor[0]) continue;
    const keys = [...host.core.marked(subscriber, STAGE_MARK[stage])].reverse();
    let from = 0;
    if (cursor !== undefined && host.shard === cursor[0]) from = keys.indexOf(cursor[1]) + 1;
    const at = { key: '', shard: host.shard, pace, paused: pausedIn(host, subscriber), now: host.now() };
    for (let i = from; i < keys.length; i++) {
      if (runs.length >= limit) return { runs, next: JSON.stringify([host.shard, i === 0 ? '' : keys[i - 1]]) };
      const state = host.core.state(keys[i]!);
      if (state === undefined) continue;
      runs.push(...runsIn(state, stage, { ...at, key: keys[i]!.slice(subscriber.length + 1) }));
    }
  }
  return { runs };
}
