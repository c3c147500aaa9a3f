/**
 * `npm run sim -- --seeds 10000 [--from S] [--steps 300] [--sabotage releaseEarly]`: a longer soak than CI's,
 * from seed S, or from a seed that changes with each run (printed first, so that the run can be repeated).
 * `npm run sim -- --seed 42 [--steps N]` replays one seed and prints what happened.
 * `--world owners` runs the partitioned world instead (owners-world.ts: instances of one app sharing a
 * broker and a store owned by partition, joining, leaving, crashing, turning zombie), as in
 * `npm run sim -- --world owners --seeds 2000 --from 1 [--sabotage keepShardsOnRevoke]`.
 */
import { parseArgs } from 'node:util';
import {
  DEFAULT_STEPS,
  SABOTAGES,
  WORLDS,
  seedArg,
  simulate,
  startSeed,
  type Sabotage,
  type WorldName,
} from './simulate.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string' },
    seed: { type: 'string' },
    from: { type: 'string' },
    steps: { type: 'string' },
    sabotage: { type: 'string' },
    world: { type: 'string' },
  },
});
const world = (values.world ?? 'files') as WorldName;
if (!WORLDS.includes(world)) throw new RangeError(`sim: --world must be one of ${WORLDS.join(', ')}, got ${world}`);
const worldArg = world === 'owners' ? ' --world owners' : '';
const bad = values.sabotage as Sabotage | undefined;
if (bad !== undefined && !SABOTAGES.includes(bad))
  throw new RangeError(`sim: --sabotage must be one of ${SABOTAGES.join(', ')}, got ${bad}`);
const steps = values.steps === undefined ? DEFAULT_STEPS : Number(values.steps);
if (!(Number.isInteger(steps) && steps >= 0))
  throw new RangeError(`sim: --steps must be an integer from 0 up, got ${values.steps}`);
const one = values.seed !== undefined;
const count = one ? 1 : Number(values.seeds ?? 500);
if (!(Number.isInteger(count) && count >= 1))
  throw new RangeError(`sim: --seeds must be an integer from 1 up, got ${values.seeds}`);
const from = one ? seedArg('--seed', values.seed!) : startSeed(count, values.from);
if (!one)
  console.log(
    `${count} seeds from ${from}, ${steps} steps each${worldArg ? ', the owners world' : ''}${bad ? `, sabotage ${bad}` : ''} (again: npm run sim -- --seeds ${count} --from ${from} --steps ${steps}${worldArg}${bad ? ` --sabotage ${bad}` : ''})`,
  );
let failed = 0;
const t0 = performance.now();
const totals = { lives: 0, acks: 0, runs: 0, published: 0, flips: 0 };
for (let seed = from; seed < from + count; seed++) {
  const r = await simulate(seed, { steps, sabotage: bad, world });
  for (const k of ['lives', 'acks', 'runs', 'published'] as const) totals[k] += r.stats[k];
  if (r.outcome.kind === 'flip-detected') totals.flips++;
  if (one) {
    console.log(`seed ${seed}: ${r.outcome.kind}; ${JSON.stringify(r.stats)}`);
    for (const n of r.notes) console.log(`  ${n}`);
  }
  if (r.violations.length > 0) {
    failed++;
    console.log(`seed ${seed} FAILED (${r.outcome.kind}):`);
    for (const v of r.violations.slice(0, 10)) console.log(`  ${v}`);
    console.log(`  replay: ${r.replay}`);
  }
}
const s = ((performance.now() - t0) / 1000).toFixed(1);
console.log(
  `${count} seeds from ${from} (${steps} steps${worldArg ? ', the owners world' : ''})${bad ? ` with sabotage ${bad}` : ''}: ${failed} failed, in ${s} s (${totals.lives} process lives, ${totals.acks} receipts, ${totals.runs} handler calls, ${totals.published} broker messages, ${totals.flips} bit flips detected)`,
);
// Exits: the owners world abandons crashed instances mid-start, whose starts hold the process (as a real
// app's `start()` does while awaited) and never end.
process.exit(failed > 0 ? 1 : 0);
