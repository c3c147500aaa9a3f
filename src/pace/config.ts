/**
 * Pace settings resolved to milliseconds, what the coordinator rules read: {@link CompiledPace}, parsed from
 * a subscriber's `pace` option when it is declared (declare/pace.ts), and the limits pace keeps.
 */
export {
  DEFAULT_BATCH_WAIT_MS,
  DEFAULT_DEDUP_MS,
  MAX_BATCH,
  MINUTE_MS,
  type CompiledPace,
  type CompiledRate,
  type OrderFn,
} from '../declare/pace.js';

/**
 * The longest key a paced subscriber takes, 65,535 bytes as UTF-8: `app.send` refuses a longer one with
 * `SEND_INVALID`; a broker delivery with one is dead-lettered (reason `DECODE_FAILED: the delivery cannot
 * be journaled for pace: …`) and its offset committed.
 *
 * @category Pace
 */
export const MAX_KEY_BYTES = 65_535;
