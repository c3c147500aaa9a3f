/**
 * ShardHost under SIGKILL: a child appends events through a host over a file store and is killed at random
 * moments, again and again on the same directory. After each kill, a host opened on the directory must
 * hold every acknowledged event exactly once, in the order each key received them, and two hosts opened
 * one after the other (replaying the same log) must agree.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, fileStore } from '../../src/index.js';
import type { Rules } from '../../src/shard/rules.js';
import { ShardHost } from '../../src/pace-stage/shard-host.js';
import { killAfterAcks } from '../crash-child.js';
import { seeded } from '../helpers.js';
import { crashRounds, soakTimeout } from '../soak.js';

const ITERATIONS = crashRounds(1 / 4);
const rules: Rules<string[], never> = {
  initial: () => [],
  apply: (s, r) => [...s, r.data as string],
  retired: () => false,
};

async function runAndKill(dir: string, tag: string, acks: number): Promise<[string, string][]> {
  const acked = await killAfterAcks('test/fixtures/shard-host-child.mjs', [dir, tag], acks);
  return acked.map(([key, id]) => [key!, id!]);
}

async function openState(dir: string): Promise<Map<string, string[]>> {
  const store = fileStore({ dir, shards: 1, segmentBytes: 32768 });
  await store.open();
  const host = new ShardHost({ log: store.log(0), rules, clock: new ManualClock(), onOutput: () => {} });
  await host.open();
  const state = new Map([...host.core.keys()].map((k) => [k, host.core.state(k)!]));
  await host.close(); // the host first (it waits for a snapshot under way), then the store under it
  await store.close();
  return state;
}

describe('ShardHost under SIGKILL', () => {
  it(
    `recovers every acknowledged event exactly once, in order, across ${ITERATIONS} kills`,
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-host-crash-'));
      const random = seeded(Number(process.env.SLUICE_CRASH_SEED ?? 5));
      const acked = new Map<string, string[]>();
      for (let i = 0; i < ITERATIONS; i++) {
        for (const [key, id] of await runAndKill(dir, `r${i}`, 1 + Math.floor(random() * 200)))
          acked.set(key, [...(acked.get(key) ?? []), id]);
        const state = await openState(dir);
        for (const [key, ids] of acked) {
          const applied = state.get(key) ?? [];
          expect(new Set(applied).size).toBe(applied.length); // nothing applied twice
          const positions = ids.map((id) => applied.indexOf(id));
          expect(positions.every((p) => p >= 0)).toBe(true); // nothing acknowledged lost
          expect(positions).toEqual([...positions].sort((a, b) => a - b)); // one key's events in the order acknowledged
        }
        expect(await openState(dir)).toEqual(state); // a second replay agrees
      }
    },
    soakTimeout(600_000),
  );
});
