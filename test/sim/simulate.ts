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
  readonly stats: { lives: number; acks: number; runs: number; published: number };
  readonly notes: string[];
}

export async function simulate(seed: number, options: { steps?: number; sabotage?: Sabotage } = {}): Promise<SeedResult> {
  for (const k of Object.keys(sabotage) as Sabotage[]) sabotage[k] = k === options.sabotage;
  try {
    const world = new World({ seed, steps: options.steps });
    const h = world.history;
    const stats = () => ({ lives: h.lives.length, acks: h.acks.length, runs: h.runs.length, published: h.published.length });
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
