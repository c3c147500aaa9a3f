/**
 * The deterministic simulation in CI: 500 seeds of the real engine on a faulty simulated disk must keep
 * every promise, and each deliberately broken engine must be caught within 2,000 seeds. `npm run sim`
 * runs longer soaks; a failing seed prints the command that replays it.
 */
import { describe, expect, it } from 'vitest';
import { sabotage, type Sabotage } from '../../src/core/sabotage.js';
import { replayCommand, simulate } from './simulate.js';

const SEEDS = Number(process.env.SLUICE_SIM_SEEDS ?? 500);

describe('deterministic simulation', () => {
  it(`keeps every promise over ${SEEDS} seeds of crashes, torn writes, failed fsyncs and bit flips`, async () => {
    const failures: string[] = [];
    const seen = { lives: 0, acks: 0, runs: 0, published: 0, drops: 0, waited: 0, flips: 0 };
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = await simulate(seed);
      for (const k of ['lives', 'acks', 'runs', 'published', 'drops', 'waited'] as const) seen[k] += r.stats[k];
      if (r.outcome.kind === 'flip-detected') seen.flips++;
      if (r.violations.length > 0) failures.push(`seed ${seed}: ${r.violations.slice(0, 3).join('; ')} — replay: ${replayCommand(seed)}`);
    }
    expect(failures).toEqual([]);
    // The seeds did exercise what they claim to: many lives, receipts, runs, broker messages and detected flips.
    expect(seen.lives).toBeGreaterThan(SEEDS * 3);
    expect(seen.acks).toBeGreaterThan(SEEDS * 20);
    expect(seen.published).toBeGreaterThan(SEEDS * 10);
    expect(seen.drops).toBeGreaterThan(SEEDS); // starts over a drop rate
    expect(seen.waited).toBeGreaterThan(SEEDS); // per-minute runs started a minute or more after their key's first: the rate was in play
    if (SEEDS >= 500) expect(seen.flips).toBeGreaterThan(0);
  }, 600_000);

  it('replays a seed exactly', async () => {
    const a = await simulate(42);
    const b = await simulate(42);
    expect(b.outcome).toEqual(a.outcome);
    expect(b.stats).toEqual(a.stats);
    expect(b.notes).toEqual(a.notes);
    expect(b.violations).toEqual(a.violations);
    const broken = await simulate(3, { sabotage: 'applyTwice' });
    expect((await simulate(3, { sabotage: 'applyTwice' })).violations).toEqual(broken.violations); // failures replay too
    expect(broken.violations.length).toBeGreaterThan(0);
  });

  const broken = Object.keys(sabotage) as Sabotage[];
  it.each(broken)('catches the broken engine "%s" within 2,000 seeds', async (bad) => {
    let caught: number | undefined;
    for (let seed = 1; seed <= 2_000 && caught === undefined; seed++) {
      if ((await simulate(seed, { sabotage: bad })).violations.length > 0) caught = seed;
    }
    expect(caught, `sabotage ${bad} was not caught`).toBeDefined();
  }, 600_000);
});
