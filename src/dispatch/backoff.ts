/** The delay before attempt `attempt + 1`: initialMs doubling per attempt, capped at maxMs. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
}
