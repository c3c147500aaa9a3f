import type { ShardLog } from '../core/ports.js';
import type { CompiledPace } from '../pace/config.js';
import type { PaceOutput, PaceState } from '../pace/rules.js';
import type { Rules } from '../shard/rules.js';
import type { ShardHostOptions } from './shard-host.js';
import type { PlacementParts, ShardPlacement } from './shard-placement.js';

/**
 * Parts of the pace stage that can be handed in instead of its own: the simulator's broken engines (see
 * `Faults`) are built of broken ones (`faultyPaceParts`, pace-faults.ts). Each part left out is the correct one,
 * named after it here.
 */
export interface PaceParts {
  /** The rules of the paced subscribers' coordinators: `paceRules(paces)`. */
  readonly rules?: (paces: ReadonlyMap<string, CompiledPace>) => Rules<PaceState, PaceOutput>;
  /** The placement of a store opened whole (ownership `all`): `new AllShards(parts)`. */
  readonly allShards?: (parts: PlacementParts) => ShardPlacement;
  /** The placement of a store owned by partition: `new OwnedShards(parts)`. */
  readonly ownedShards?: (parts: PlacementParts) => ShardPlacement;
  /** A shard's log as its host runs over it: the store's, as it is. */
  readonly shardLog?: (log: ShardLog) => ShardLog;
  /** Told of each record a host applied live, before it is durable: nothing (see `ShardHostOptions.onApplied`). */
  readonly onApplied?: ShardHostOptions<PaceState, PaceOutput>['onApplied'];
  /**
   * The time an event's record is stamped with, given the shard's time that `opensRun` was asked at: that
   * very time (undefined would have the host read its clock again).
   */
  readonly stamp?: (at: number) => number | undefined;
}
