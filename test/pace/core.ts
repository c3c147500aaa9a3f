import type { CompiledPace } from '../../src/pace/config.js';
import { paceRules, type PaceOutput, type PaceState } from '../../src/pace/rules.js';
import type { ShardRecord } from '../../src/shard/rules.js';
import { ShardCore } from '../../src/shard/shard-core.js';

/** A core with the pace rules of `paces`, fed records as a host would: each the next LSN, outputs released up to it. */
export function paceCore(paces: ReadonlyMap<string, CompiledPace>) {
  const c = new ShardCore<PaceState, PaceOutput>(paceRules(paces), { nowMs: 0 });
  let lsn = 0;
  const apply = (r: ShardRecord) => c.apply(++lsn, r);
  const released = () => c.release(lsn);
  return { c, apply, released };
}
