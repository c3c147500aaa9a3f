/** What the benchmarks report with: the median of rounds, their range, and a rate as people read it. */

/** The median (the mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** `min–max` with `digits` decimals. */
export const range = (xs: readonly number[], digits = 2): string =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

/** A whole number with thousands separators: 1,234,567. */
export const fmt = (n: number): string => Math.round(n).toLocaleString('en');

/** `concurrency` loops, each awaiting one append after another until `seconds` of wall time are up; appends/s. */
export async function drive(
  seconds: number,
  concurrency: number,
  append: () => Promise<unknown>,
): Promise<{ rate: number; count: number }> {
  let count = 0;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      await append();
      count++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return { rate: count / ((performance.now() - t0) / 1000), count };
}
