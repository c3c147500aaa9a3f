import { seeded } from '../helpers.js';

/** A seeded source of choices: everything the simulator decides comes from here, so a seed replays exactly. */
export class Random {
  private readonly next: () => number;

  constructor(readonly seed: number) {
    this.next = seeded(seed);
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** An index into `weights`, chosen with those weights. */
  weighted(weights: readonly number[]): number {
    let r = this.next() * weights.reduce((a, b) => a + b, 0);
    for (let i = 0; i < weights.length; i++) if ((r -= weights[i]!) < 0) return i;
    return weights.length - 1;
  }
}
