/**
 * The deterministic simulation in CI: 500 seeds of the real engine on a faulty simulated disk must keep
 * every promise — from a seed that changes with each run (printed; `SLUICE_SIM_FROM` repeats a run), so
 * that CI tries new seeds every time — and so must every seed that once failed. Each deliberately broken
 * engine must be caught within 2,000 seeds. So too in the partitioned world (shards owned by partition,
 * instances joining, leaving, crashing and turning zombie): 300 seeds (`SLUICE_SIM_OWNERS_SEEDS`), and its
 * broken engines caught within 500. `npm run sim` runs longer soaks; a failing seed prints the command
 * that replays it.
 */
import { describe, expect, it } from 'vitest';
import { FILE_SABOTAGES, OWNERS_SABOTAGES, simulate, startSeed, type Sabotage, type SimOptions } from './simulate.js';
import { SOAK, soakTimeout } from '../soak.js';

const SEEDS = Number(process.env.SLUICE_SIM_SEEDS ?? (SOAK ? 10_000 : 500));
const FROM = startSeed(SEEDS, process.env.SLUICE_SIM_FROM, 'SLUICE_SIM_FROM');
const OWNERS_SEEDS = Number(process.env.SLUICE_SIM_OWNERS_SEEDS ?? (SOAK ? 3_000 : 300));
const OWNERS_FROM = startSeed(OWNERS_SEEDS, process.env.SLUICE_SIM_OWNERS_FROM, 'SLUICE_SIM_OWNERS_FROM');

/**
 * Seeds that once failed, with the steps they failed at: each must pass for good. Add a seed here, with
 * what it found, when a run finds one. (A fix changes what a seed does, so these guard loosely; each
 * fix has a test of its own.)
 */
const REGRESSIONS: readonly (SimOptions & { seed: number; found: string })[] = [
  {
    seed: 7770085,
    steps: 600,
    found: 'drop: 3 runs of a key within 2,993 ms of a 3 s period (a restart on a clock behind the log)',
  },
  { seed: 7770572, steps: 600, found: 'drop: 3 runs of a key within 2,998 ms (the same)' },
  { seed: 7770846, steps: 600, found: 'drop: 3 runs of a key within 2,996 ms (the same)' },
  { seed: 7770943, steps: 600, found: 'drop: 3 runs of a key within 2,997 ms (the same)' },
  { seed: 7771526, steps: 600, found: 'drop: 3 runs of a key within 2,996 ms (the same)' },
  { seed: 7772678, steps: 600, found: 'drop: 3 runs of a key within 2,997 ms (the same)' },
  {
    seed: 25,
    steps: 300,
    world: 'owners',
    found:
      'a run let go at a revoke’s deadline failed, was retried on the instance that had the shard back, and ran after it had finished there',
  },
  {
    seed: 7770610,
    steps: 600,
    found:
      'a bit flipped in the last record of a segment, before a segment holding a torn first write: recovery cut it off as a torn tail',
  },
  {
    seed: 2426631791,
    steps: 2000,
    found: 'per-minute windows that never ran: the quiet phase ended before the rate could start the backlog',
  },
];

describe('deterministic simulation', () => {
  it(
    `keeps every promise over ${SEEDS} seeds (from a seed that changes with each run) of crashes, torn writes, failed fsyncs and bit flips`,
    async () => {
      console.log(
        `simulation: ${SEEDS} seeds from ${FROM} (again: SLUICE_SIM_FROM=${FROM}${SEEDS !== 500 ? ` SLUICE_SIM_SEEDS=${SEEDS}` : ''} npx vitest run test/sim)`,
      );
      const failures: string[] = [];
      const seen = { lives: 0, acks: 0, runs: 0, published: 0, drops: 0, waited: 0, flips: 0 };
      for (let seed = FROM; seed < FROM + SEEDS; seed++) {
        const r = await simulate(seed);
        for (const k of ['lives', 'acks', 'runs', 'published', 'drops', 'waited'] as const) seen[k] += r.stats[k];
        if (r.outcome.kind === 'flip-detected') seen.flips++;
        if (r.violations.length > 0)
          failures.push(`seed ${seed}: ${r.violations.slice(0, 3).join('; ')} — replay: ${r.replay}`);
      }
      expect(failures, `seeds from ${FROM}`).toEqual([]);
      // The seeds did exercise what they claim to: many lives, receipts, runs, broker messages and detected flips.
      expect(seen.lives).toBeGreaterThan(SEEDS * 3);
      expect(seen.acks).toBeGreaterThan(SEEDS * 20);
      expect(seen.published).toBeGreaterThan(SEEDS * 10);
      // Starts over a drop rate: 0.8 a seed over seeds 1 to 100, fewer than before, since each life now spends
      // steps on the disk work of its open (manifests, segment headers) before it takes events.
      expect(seen.drops).toBeGreaterThan(SEEDS / 2);
      expect(seen.waited).toBeGreaterThan(SEEDS); // per-minute runs started a minute or more after their key's first: the rate was in play
      if (SEEDS >= 500) expect(seen.flips).toBeGreaterThan(0);
    },
    soakTimeout(600_000),
  );

  it.each(REGRESSIONS)(
    'keeps every promise on seed $seed ($steps steps), which once failed: $found',
    async ({ seed, steps, world }) => {
      const r = await simulate(seed, { steps, world });
      expect(r.violations, r.replay).toEqual([]);
    },
  );

  it('replays a seed exactly, and prints the command that does', async () => {
    const a = await simulate(42);
    const b = await simulate(42);
    expect(b.outcome).toEqual(a.outcome);
    expect(b.stats).toEqual(a.stats);
    expect(b.notes).toEqual(a.notes);
    expect(b.violations).toEqual(a.violations);
    const broken = await simulate(3, { sabotage: 'applyTwice' });
    expect((await simulate(3, { sabotage: 'applyTwice' })).violations).toEqual(broken.violations); // failures replay too
    expect(broken.violations.length).toBeGreaterThan(0);
    // The replay command names everything that decides a run: a seed run with more steps is replayed with them.
    expect(a.replay).toBe('npm run sim -- --seed 42 --steps 300');
    expect(broken.replay).toBe('npm run sim -- --seed 3 --steps 300 --sabotage applyTwice');
    const long = await simulate(42, { steps: 450 });
    expect(long.replay).toBe('npm run sim -- --seed 42 --steps 450');
    expect(long.stats).not.toEqual(a.stats); // without its steps, another run
    expect((await simulate(...replayed(long.replay))).notes).toEqual(long.notes);
  });

  it.each(FILE_SABOTAGES)(
    'catches the broken engine "%s" within 2,000 seeds',
    async (bad) => {
      let caught: number | undefined;
      for (let seed = 1; seed <= 2_000 && caught === undefined; seed++) {
        if ((await simulate(seed, { sabotage: bad })).violations.length > 0) caught = seed;
      }
      expect(caught, `sabotage ${bad} was not caught`).toBeDefined();
    },
    600_000,
  );

  it(
    `keeps every promise over ${OWNERS_SEEDS} seeds of the partitioned world: instances that join, leave, crash and turn zombie`,
    async () => {
      console.log(
        `owners simulation: ${OWNERS_SEEDS} seeds from ${OWNERS_FROM} (again: SLUICE_SIM_OWNERS_FROM=${OWNERS_FROM}${OWNERS_SEEDS !== 300 ? ` SLUICE_SIM_OWNERS_SEEDS=${OWNERS_SEEDS}` : ''} npx vitest run test/sim)`,
      );
      const failures: string[] = [];
      const seen = { lives: 0, acks: 0, runs: 0, published: 0 };
      for (let seed = OWNERS_FROM; seed < OWNERS_FROM + OWNERS_SEEDS; seed++) {
        const r = await simulate(seed, { world: 'owners' });
        for (const k of ['lives', 'acks', 'runs', 'published'] as const) seen[k] += r.stats[k];
        if (r.violations.length > 0)
          failures.push(`seed ${seed}: ${r.violations.slice(0, 3).join('; ')} — replay: ${r.replay}`);
      }
      expect(failures, `seeds from ${OWNERS_FROM}`).toEqual([]);
      // Instances came and went (more lives than the first one or two), receipts came back, runs ran.
      expect(seen.lives).toBeGreaterThan(OWNERS_SEEDS * 4);
      expect(seen.acks).toBeGreaterThan(OWNERS_SEEDS * 10);
      expect(seen.runs).toBeGreaterThan(OWNERS_SEEDS * 20);
      expect(seen.published).toBeGreaterThan(OWNERS_SEEDS * 20);
    },
    soakTimeout(600_000),
  );

  it('replays a seed of the partitioned world exactly', async () => {
    const a = await simulate(7, { world: 'owners' });
    const b = await simulate(7, { world: 'owners' });
    expect(b.stats).toEqual(a.stats);
    expect(b.notes).toEqual(a.notes);
    expect(a.replay).toBe('npm run sim -- --seed 7 --steps 300 --world owners');
    expect((await simulate(...replayed(a.replay))).notes).toEqual(a.notes);
  });

  it.each(OWNERS_SABOTAGES)(
    'catches the broken engine "%s" in the partitioned world within 500 seeds',
    async (bad) => {
      let caught: number | undefined;
      for (let seed = 1; seed <= 500 && caught === undefined; seed++) {
        if ((await simulate(seed, { sabotage: bad, world: 'owners' })).violations.length > 0) caught = seed;
      }
      expect(caught, `sabotage ${bad} was not caught`).toBeDefined();
    },
    600_000,
  );
});

/** What a replay command asks `simulate` for, read as the command line reads it. */
function replayed(command: string): [number, SimOptions] {
  const arg = (name: string): string | undefined => command.match(new RegExp(`--${name} (\\S+)`))?.[1];
  return [
    Number(arg('seed')),
    {
      steps: Number(arg('steps')),
      sabotage: arg('sabotage') as Sabotage | undefined,
      world: arg('world') === 'owners' ? 'owners' : undefined,
    },
  ];
}
