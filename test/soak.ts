/**
 * How long the long loops run. `npm test` runs a short version of each soak that can still fail;
 * `npm run test:soak` sets `SLUICE_SOAK=1` and runs the same tests long: the 10,000-seed simulations, the
 * 30 and 90 s broker outages, the SIGKILL loops of hundreds of rounds (see docs/testing.md).
 */

/** True under `npm run test:soak`. */
export const SOAK = process.env.SLUICE_SOAK === '1';

/**
 * The rounds of a SIGKILL loop: `share` of `SLUICE_CRASH_ITERATIONS` (by default 200, or 1,000 in the
 * soak), at least one.
 */
export function crashRounds(share: number): number {
  const base = Number(process.env.SLUICE_CRASH_ITERATIONS ?? (SOAK ? 1_000 : 200));
  return Math.max(1, Math.round(base * share));
}

/** A long test's timeout: `ms` in `npm test`, twenty times as long in the soak. */
export const soakTimeout = (ms: number): number => (SOAK ? ms * 20 : ms);
