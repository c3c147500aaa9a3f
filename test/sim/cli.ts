/**
 * `npm run sim -- --seeds 10000 [--from 1] [--steps 300] [--sabotage releaseEarly]`: a longer soak than CI's.
 * `npm run sim -- --seed 42` replays one seed and prints what happened.
 */
import { parseArgs } from 'node:util';
import type { Sabotage } from '../../src/core/sabotage.js';
import { replayCommand, simulate } from './simulate.js';

const { values } = parseArgs({ options: { seeds: { type: 'string' }, seed: { type: 'string' }, from: { type: 'string' }, steps: { type: 'string' }, sabotage: { type: 'string' } } });
const bad = values.sabotage as Sabotage | undefined;
const steps = values.steps === undefined ? undefined : Number(values.steps);
const one = values.seed !== undefined;
const from = Number(values.seed ?? values.from ?? 1);
const count = one ? 1 : Number(values.seeds ?? 500);
let failed = 0;
const t0 = performance.now();
const totals = { lives: 0, acks: 0, runs: 0, published: 0, flips: 0 };
for (let seed = from; seed < from + count; seed++) {
  const r = await simulate(seed, { steps, sabotage: bad });
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
    console.log(`  replay: ${replayCommand(seed, bad)}`);
  }
}
const s = ((performance.now() - t0) / 1000).toFixed(1);
console.log(`${count} seeds from ${from}${bad ? ` with sabotage ${bad}` : ''}: ${failed} failed, in ${s} s (${totals.lives} process lives, ${totals.acks} receipts, ${totals.runs} handler calls, ${totals.published} broker messages, ${totals.flips} bit flips detected)`);
process.exitCode = failed > 0 ? 1 : 0;
