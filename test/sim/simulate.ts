/**
 * Runs seeds through the simulated world and checks each: `simulate(seed)` for one, `npm run sim -- --seeds N
 * [--from S] [--sabotage name]` from the command line.
 */
import { sabotage, type Sabotage } from '../../src/core/sabotage.js';
import { check, type Outcome } from './checkers.js';
import { World } from './world.js';

export interface SeedResult {
  readonly seed: number;
  readonly outcome: Outcome;
  readonly violations: string[];
  readonly stats: { lives: number; acks: number; runs: number; published: number; drops: number; waited: number };
  readonly notes: string[];
}

export async function simulate(seed: number, options: { steps?: number; sabotage?: Sabotage } = {}): Promise<SeedResult> {
  for (const k of Object.keys(sabotage) as Sabotage[]) sabotage[k] = k === options.sabotage;
  try {
    const world = new World({ seed, steps: options.steps });
    const h = world.history;
    const stats = () => ({ lives: h.lives.length, acks: h.acks.length, runs: h.runs.length, published: h.published.length, drops: h.drops.length, waited: waited(h) });
    let outcome: Outcome;
    try {
      outcome = await world.run();
    } catch (error) {
      // The engine threw where it must not (a recovery that parses garbage, say): that is a failure of the seed.
      outcome = { kind: 'threw', error: String((error as Error)?.stack ?? error) };
    }
    return { seed, outcome, violations: check(h, outcome), stats: stats(), notes: h.notes };
  } finally {
    for (const k of Object.keys(sabotage) as Sabotage[]) sabotage[k] = false;
  }
}

/** The one command that replays a seed. */
export const replayCommand = (seed: number, bad?: Sabotage): string => `npm run sim -- --seed ${seed}${bad ? ` --sabotage ${bad}` : ''}`;

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
