/**
 * Runs seeds through a simulated world and checks each: `simulate(seed)` for one of the file world
 * (world.ts), `simulate(seed, { world: 'owners' })` of the partitioned one (owners-world.ts); `npm run sim --
 * --seeds N [--from S] [--steps N] [--world owners] [--sabotage name]` from the command line.
 */
import { randomInt } from 'node:crypto';
import type { Faults } from '../../src/core/ports.js';
import { check, type Outcome } from './checkers.js';
import { checkOwners } from './owners-checkers.js';
import { OwnersWorld } from './owners-world.js';
import { World } from './world.js';

/** A broken engine to run instead of the real one: one of the engine's injectable faults. */
export type Sabotage = keyof Faults;

/** The simulated worlds: of files (world.ts), or of shards owned by partition (owners-world.ts). */
export type WorldName = 'files' | 'owners';
export const WORLDS: readonly WorldName[] = ['files', 'owners'];

/**
 * Every injectable fault, each a broken engine the checkers must catch, with the world that catches it
 * (the record makes the list whole).
 */
const ALL: Record<Sabotage, WorldName> = {
  releaseEarly: 'files',
  skipCrc: 'files',
  skipDirSync: 'files',
  applyTwice: 'files',
  forgetIds: 'files',
  loseTimers: 'files',
  forgetWaiting: 'files',
  ignoreRates: 'files',
  ignorePause: 'files',
  readClockTwice: 'files',
  serveShardsInTurn: 'files',
  keepShardsOnRevoke: 'owners',
};
export const SABOTAGES = Object.keys(ALL) as Sabotage[];
/** The faults the file world must catch. */
export const FILE_SABOTAGES = SABOTAGES.filter((s) => ALL[s] === 'files');
/** The faults the partitioned world must catch. */
export const OWNERS_SABOTAGES = SABOTAGES.filter((s) => ALL[s] === 'owners');

/** Scheduler steps with faults when a run does not say. */
export const DEFAULT_STEPS = 300;

export interface SimOptions {
  readonly steps?: number;
  readonly sabotage?: Sabotage;
  /** @default 'files' */
  readonly world?: WorldName;
}

export interface SeedResult {
  readonly seed: number;
  /** The one command that replays this seed exactly (its steps and sabotage included). */
  readonly replay: string;
  readonly outcome: Outcome;
  readonly violations: string[];
  readonly stats: { lives: number; acks: number; runs: number; published: number; drops: number; waited: number };
  readonly notes: string[];
}

export async function simulate(seed: number, options: SimOptions = {}): Promise<SeedResult> {
  const steps = options.steps ?? DEFAULT_STEPS;
  const faults = options.sabotage ? { [options.sabotage]: true } : {};
  if (options.world === 'owners') return simulateOwners(seed, steps, options);
  {
    const world = new World({ seed, steps, faults });
    const h = world.history;
    const stats = () => ({
      lives: h.lives.length,
      acks: h.acks.length,
      runs: h.runs.length,
      published: h.published.length,
      drops: h.drops.length,
      waited: waited(h),
    });
    let outcome: Outcome;
    try {
      outcome = await world.run();
    } catch (error) {
      // The engine threw where it must not (a recovery that parses garbage, say): that is a failure of the seed.
      outcome = { kind: 'threw', error: String((error as Error)?.stack ?? error) };
    }
    return {
      seed,
      replay: replayCommand(seed, { steps, sabotage: options.sabotage }),
      outcome,
      violations: check(h, outcome),
      stats: stats(),
      notes: h.notes,
    };
  }
}

/** A seed of the partitioned world (owners-world.ts), checked by owners-checkers.ts. */
async function simulateOwners(seed: number, steps: number, options: SimOptions): Promise<SeedResult> {
  const world = new OwnersWorld({ seed, steps, faults: options.sabotage ? { [options.sabotage]: true } : {} });
  const h = world.history;
  let outcome: Outcome;
  try {
    outcome = await world.run();
  } catch (error) {
    outcome = { kind: 'threw', error: String((error as Error)?.stack ?? error) };
  }
  return {
    seed,
    replay: replayCommand(seed, { ...options, steps }),
    outcome,
    violations: checkOwners(h, outcome),
    stats: {
      lives: h.lives.length,
      acks: h.acks.length,
      runs: h.runs.length,
      published: h.published.length,
      drops: h.drops.length,
      waited: waited(h),
    },
    notes: h.notes,
  };
}

/** The one command that replays a seed: everything that decides the run, world, steps and sabotage included. */
export const replayCommand = (seed: number, options: SimOptions = {}): string =>
  `npm run sim -- --seed ${seed} --steps ${options.steps ?? DEFAULT_STEPS}${options.world === 'owners' ? ' --world owners' : ''}${options.sabotage ? ` --sabotage ${options.sabotage}` : ''}`;

/** Seeds are 32-bit: a run of `count` seeds from the returned one stays within them. */
const MAX_SEED = 2 ** 32 - 1;

/**
 * Where a run of `count` seeds starts: `fixed` when given (a replay of an earlier run), else a seed that
 * changes with each run, so that each run tries seeds no earlier run tried. Print it.
 */
export function startSeed(count: number, fixed?: string, name = '--from'): number {
  if (fixed !== undefined && fixed !== '') return seedArg(name, fixed);
  return randomInt(1, MAX_SEED - count);
}

/** A seed given on the command line or in the environment: an integer from 0 to 2^32 - 1. */
export function seedArg(name: string, text: string): number {
  const n = Number(text);
  if (!(Number.isInteger(n) && n >= 0 && n <= MAX_SEED))
    throw new RangeError(`sim: ${name} must be an integer from 0 to ${MAX_SEED}, got ${text}`);
  return n;
}

/** Distinct runs of the per-minute subscriber started a minute or more after their key's first run: the rate was in play. */
function waited(h: Parameters<typeof check>[0]): number {
  const first = new Map<string, number>();
  const runs = new Map<string, { key: string; startedAt: number }>();
  for (const r of h.runs) if (r.sub === 'pm') runs.set(r.runId, r);
  let n = 0;
  for (const r of [...runs.values()].sort((a, b) => a.startedAt - b.startedAt)) {
    const f = first.get(r.key);
    if (f === undefined) first.set(r.key, r.startedAt);
    else if (r.startedAt - f >= 60_000) n++;
  }
  return n;
}
