import type { ShardLog } from '../src/core/ports.js';
import type { Receipt } from '../src/index.js';

/** Test synchronisation: explicit signals instead of sleeps. */

/** A promise with its resolve, for holding a handler until the test lets it go. */
export class Gate {
  readonly promise: Promise<void>;
  open!: () => void;
  opened = false;
  constructor() {
    this.promise = new Promise<void>((resolve) => {
      this.open = () => {
        this.opened = true;
        resolve();
      };
    });
  }
}

/** A count that tests can wait on: `await counter.reach(4)`. */
export class Counter {
  value = 0;
  private waiters: { target: number; resolve: () => void }[] = [];

  add(n = 1): void {
    this.value += n;
    this.waiters = this.waiters.filter((w) => (this.value >= w.target ? (w.resolve(), false) : true));
  }

  reach(target: number): Promise<void> {
    if (this.value >= target) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ target, resolve }));
  }
}

/** Tracks how many are running at once, and the most ever. */
export class Concurrency {
  active = 0;
  max = 0;
  readonly started = new Counter();
  readonly finished = new Counter();

  enter(): void {
    this.active++;
    this.max = Math.max(this.max, this.active);
    this.started.add();
  }

  leave(): void {
    this.active--;
    this.finished.add();
  }
}

/** A seeded pseudo-random generator (mulberry32), so that "random" tests replay. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Lets ready work run for `turns` macrotask turns: a handler's simulated latency, in turns, not time. */
export async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** `log` with its snapshots written through `write` (which calls the real one when it will): the rest as it is. */
export function snapshotsThrough(log: ShardLog, write: ShardLog['writeSnapshot']): ShardLog {
  return {
    shard: log.shard,
    append: (record) => log.append(record),
    assignedLsn: () => log.assignedLsn(),
    durableLsn: () => log.durableLsn(),
    replay: (from, visit) => log.replay(from, visit),
    readSnapshot: () => log.readSnapshot(),
    writeSnapshot: write,
  };
}

/** The run a receipt names; throws for a dropped event (a test that expected a run). */
export function runIdOf(r: Receipt): string {
  if (r.kind !== 'run') throw new Error(`expected a run's receipt, got ${JSON.stringify(r)}`);
  return r.runId;
}
