import { SluiceError, show } from '../core/errors.js';

const UNIT_MS: Record<string, number> = {
  ms: 1,
  msec: 1,
  msecs: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};
const PATTERN = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i;

/**
 * A duration: milliseconds, or a string such as `'500 ms'`, `'10s'`, `'30 seconds'`, `'2 minutes'`,
 * `'1 hour'`, `'1 day'` (read by {@link parseDuration}).
 *
 * @category Pace
 */
export type Duration = number | string;

/**
 * Reads a {@link Duration} into whole milliseconds (rounded). A number must be >= 0; text is a number
 * (decimals allowed) and a unit, in any case: `ms`, `msec(s)`, `millisecond(s)`, `s`, `sec(s)`,
 * `second(s)`, `m`, `min(s)`, `minute(s)`, `h`, `hr(s)`, `hour(s)`, `d`, `day(s)`.
 *
 * @param value - the duration.
 * @param where - names the setting in the error message.
 * @throws {@link SluiceError} `PACE_BAD_DURATION` for anything else, quoting the value.
 *
 * @example
 * ```ts
 * parseDuration('2 minutes', 'pace.debounce'); // 120000
 * parseDuration(1.5, 'x'); // 2
 * ```
 *
 * @category Pace
 */
export function parseDuration(value: unknown, where: string): number {
  if (typeof value === 'number') {
    // Beyond 2^53 ms (285,000 years) whole milliseconds no longer read exactly: refused like text would be.
    if (value >= 0 && Number.isSafeInteger(Math.round(value))) return Math.round(value);
  } else if (typeof value === 'string') {
    const m = PATTERN.exec(value);
    const unit = m ? UNIT_MS[m[2]!.toLowerCase()] : undefined;
    if (m && unit !== undefined) {
      const ms = Math.round(Number(m[1]) * unit);
      if (Number.isSafeInteger(ms)) return ms;
    }
  }
  throw new SluiceError(
    'PACE_BAD_DURATION',
    `${where}: ${show(value)} is not a duration (milliseconds, or text such as '500 ms', '10s', '2 minutes', '1 hour')`,
  );
}
