import type { Admin, Consumer as KafkajsConsumer } from 'kafkajs';
import { deadlineIn, deadlineOf } from '../../../core/deadline.js';
import type { Clock, Logger } from '../../../core/ports.js';

/** How long a stop waits for the broker (the final commit, leaving the group) when the app does not say. */
export const CLOSE_TIMEOUT_MS = 30_000;

/** Races work against a close's deadline: true when the work ended first. */
export type Within = (work: Promise<unknown>) => Promise<boolean>;

/**
 * A consumer's close deadline: `deadline` when the app gives one (that of its whole stop), else `timeoutMs`
 * on `clock`. `within` races work against it; `cancel` lets the timer go once the close is done.
 */
export function closeDeadline(
  deadline: Promise<void> | undefined,
  timeoutMs: number,
  clock: Clock,
): { readonly within: Within; readonly cancel: () => void } {
  return deadline ? deadlineOf(deadline) : deadlineIn(clock, timeoutMs, { keepAlive: true });
}

/**
 * Leaves the group (after a join under way: kafkajs's disconnect does nothing to one) within the close's
 * deadline, else in the background; true once it has left.
 */
export async function leaveGroup(
  consumer: KafkajsConsumer | undefined,
  starting: Promise<void> | undefined,
  within: Within,
  timeoutMs: number,
  log: Logger,
): Promise<boolean> {
  const leave = (starting ?? Promise.resolve()).catch(() => {}).then(() => consumer?.disconnect());
  const left = leave.then(
    () => true,
    (error: unknown) => {
      log.warn('leaving the group failed', { error });
      return false;
    },
  );
  if (await within(left)) return left;
  log.warn('leaving the group: the broker did not answer within the shutdown timeout; it goes on in the background', {
    timeoutMs,
  });
  return false;
}

/** Deletes a group its member has left (`ConsumeRequest.forgetOnClose`), within the close's deadline. */
export async function forgetGroup(admin: Admin, group: string, within: Within, log: Logger): Promise<void> {
  const deleted = admin
    .deleteGroups([group])
    .catch((error: unknown) => log.debug('the group was not deleted; it expires', { group, error }));
  if (!(await within(deleted))) log.debug('the group was not deleted in time; it expires', { group });
}
