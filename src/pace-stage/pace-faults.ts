import type { Faults } from '../core/ports.js';
import type { CompiledPace } from '../pace/config.js';
import { withoutIds } from '../pace/ids.js';
import { paceRules, type PaceOutput, type PaceState } from '../pace/rules.js';
import type { ShardHost } from './shard-host.js';

/**
 * The pace stage's part of the simulator's broken engines (see `Faults`): each is off unless injected, and
 * none of this runs otherwise.
 */

/**
 * The pace rules, with the faults that break them: `ignoreRates` (no rate holds a start back), `forgetIds`
 * and `forgetWaiting` (snapshots drop remembered IDs and offsets, or the starts that wait for a rate).
 */
export function rulesOf(paces: ReadonlyMap<string, CompiledPace>, faults: Faults): ReturnType<typeof paceRules> {
  const rules = paceRules(faults.ignoreRates ? withoutRates(paces) : paces);
  const { forgetIds, forgetWaiting } = faults;
  if (!forgetIds && !forgetWaiting) return rules;
  return {
    ...rules,
    rebase: (s) => {
      if (forgetIds) s = withoutIds(s);
      return forgetWaiting ? { ...s, waiting: [] } : s;
    },
  };
}

/** The broken open of `serveShardsInTurn`: each shard serves as soon as it has replayed. */
export async function serveInTurn(hosts: readonly ShardHost<PaceState, PaceOutput>[]): Promise<void> {
  for (const host of hosts) {
    await host.recover();
    host.serve();
  }
}

/** The paces without their rates. */
const withoutRates = (paces: ReadonlyMap<string, CompiledPace>): ReadonlyMap<string, CompiledPace> =>
  new Map([...paces].map(([name, pace]) => [name, { ...pace, rate: undefined }]));
