import { utf8 } from '../core/message.js';
import type { Faults, ShardLog } from '../core/ports.js';
import type { CompiledPace } from '../pace/config.js';
import { withoutIds } from '../pace/ids.js';
import { paceRules, type PaceOutput, type PaceState } from '../pace/rules.js';
import type { Rules } from '../shard/rules.js';
import { shardOf } from '../shard/shard-of.js';
import { SNAPSHOT_CLOSE, readSnapshotText, snapshotLines, snapshotOpening } from '../shard/snapshot-text.js';
import { AllShards } from './all-shards.js';
import { OwnedShards } from './owned-shards.js';
import type { PaceParts } from './pace-parts.js';
import type { PaceHost } from './shard-placement.js';

/**
 * The pace stage's part of the simulator's broken engines (see `Faults`): for each fault injected, the broken
 * part the pace stage is built of instead of its own. Nothing here runs unless a fault is injected: with
 * none, no part is replaced.
 */
export function faultyPaceParts(faults: Faults): PaceParts {
  const { ignoreRates, forgetIds, forgetWaiting, applyTwice, loseTimers, ignorePause } = faults;
  return {
    rules: ignoreRates || forgetIds || forgetWaiting || ignorePause ? (paces) => brokenRules(paces, faults) : undefined,
    allShards: faults.serveShardsInTurn ? (parts) => new ShardsServedInTurn(parts) : undefined,
    ownedShards: faults.keepShardsOnRevoke ? (parts) => new ShardsKeptOnRevoke(parts) : undefined,
    shardLog: applyTwice || loseTimers ? (log) => brokenLog(log, faults) : undefined,
    // Outputs handed out as soon as their record is applied, before it is durable.
    onApplied: faults.releaseEarly ? (lsn, handOut) => handOut(lsn) : undefined,
    // No time given: the host stamps the record with its clock, read again after `opensRun` read it.
    stamp: faults.readClockTwice ? () => undefined : undefined,
  };
}

/**
 * The pace rules, with the faults that break them: `ignoreRates` (no rate holds a start back), `forgetIds`
 * and `forgetWaiting` (snapshots drop remembered IDs and offsets, or the starts that wait for a rate),
 * `ignorePause` (the rules never see a pause).
 */
function brokenRules(paces: ReadonlyMap<string, CompiledPace>, faults: Faults): Rules<PaceState, PaceOutput> {
  let rules = paceRules(faults.ignoreRates ? withoutRates(paces) : paces);
  if (faults.ignorePause) {
    const apply = rules.apply.bind(rules);
    rules = {
      ...rules,
      // The effects' methods write to the object they are called on: called through the real one, so that what
      // the rules set (a timer, a reply) is what the core reads back. A prototype delegate would keep it.
      apply: (s, r, fx) =>
        apply(s, r, {
          ...fx,
          output: (o) => fx.output(o),
          reply: (v) => fx.reply(v),
          timer: (t) => fx.timer(t),
          marked: () => false,
        }),
    };
  }
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

/** The paces without their rates. */
const withoutRates = (paces: ReadonlyMap<string, CompiledPace>): ReadonlyMap<string, CompiledPace> =>
  new Map([...paces].map(([name, pace]) => [name, { ...pace, rate: undefined }]));

/**
 * `serveShardsInTurn`: the shards of a store opened whole are opened one at a time, each handing out its runs
 * (and firing its timers) before the next has replayed, and records are routed by the shards opened so far.
 */
export class ShardsServedInTurn extends AllShards {
  /** Each shard serves as soon as it has replayed; the pace stage takes records from the start. */
  override async open(serving: () => void): Promise<void> {
    serving();
    for (const host of this.makeHosts()) {
      await host.recover();
      host.serve();
    }
  }

  /** The host of a key's shard among the shards opened so far. */
  protected override host(key: string): PaceHost {
    const begun = this.all().filter((h) => h.phase !== 'new');
    return begun[shardOf(key, begun.length)]!;
  }
}

/**
 * `keepShardsOnRevoke`: a shard owned by partition is not handed over when its partition is revoked; it keeps
 * serving (its timers fire, its runs go out) beside its next owner.
 */
export class ShardsKeptOnRevoke extends OwnedShards {
  /** Hands nothing over. */
  protected override closeShard(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * A shard's log, broken: `applyTwice` replays each record twice (the second time at the LSN + 0.5, so that
 * the core applies it again), `loseTimers` reads its snapshot back without the keys' timers.
 */
function brokenLog(log: ShardLog, { applyTwice, loseTimers }: Faults): ShardLog {
  return {
    shard: log.shard,
    append: (record, outputs) => log.append(record, outputs),
    assignedLsn: () => log.assignedLsn(),
    durableLsn: () => log.durableLsn(),
    replay: applyTwice
      ? (fromLsn, visit) =>
          log.replay(fromLsn, (lsn, record) => {
            visit(lsn, record);
            visit(lsn + 0.5, record);
          })
      : (fromLsn, visit) => log.replay(fromLsn, visit),
    writeSnapshot: (lsn, state) => log.writeSnapshot(lsn, state),
    readSnapshot: loseTimers
      ? () => log.readSnapshot().then((read) => read && { lsn: read.lsn, state: withoutTimers(read.state) })
      : () => log.readSnapshot(),
  };
}

/** A snapshot's text (see snapshot-text.ts) with every key's timer null. */
function withoutTimers(state: Uint8Array): Uint8Array {
  const { lsn, at, keys } = readSnapshotText(utf8(state));
  const entries = [...keys].map(([key, json]) => JSON.stringify([key, json, null]));
  return Buffer.from(
    snapshotOpening(lsn, at) + (entries.length > 0 ? snapshotLines(entries, true) : '') + SNAPSHOT_CLOSE,
  );
}
