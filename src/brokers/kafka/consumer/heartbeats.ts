import type { Clock, Logger, Timer } from '../../../core/ports.js';

const REBALANCE_ERRORS = new Set([
  'REBALANCE_IN_PROGRESS',
  'NOT_COORDINATOR_FOR_GROUP',
  'ILLEGAL_GENERATION',
  'UNKNOWN_MEMBER_ID',
]);

/** True for the error answers with which the coordinator tells a member that its group is rebalancing. */
export const isRebalance = (e: unknown): boolean => REBALANCE_ERRORS.has((e as { type?: string })?.type ?? '');

/**
 * Waits for `work` while heartbeating, so that the coordinator keeps this member while it settles its
 * revoked partitions (during a rebalance a heartbeat answers REBALANCE_IN_PROGRESS, and still counts). Gives
 * up waiting one heartbeat interval before the rebalance timeout: the work goes on, its results dropped.
 */
export async function heartbeating(
  work: Promise<void>,
  heartbeat: () => Promise<void>,
  settings: { heartbeatIntervalMs: number; rebalanceTimeoutMs: number },
  log: Logger,
  clock: Clock,
): Promise<void> {
  const { heartbeatIntervalMs, rebalanceTimeoutMs } = settings;
  const giveUpAt = clock.now() + Math.max(heartbeatIntervalMs, rebalanceTimeoutMs - heartbeatIntervalMs);
  let finished = false;
  const finish = (): void => {
    finished = true;
  };
  const done = work.then(finish, finish);
  while (!finished && clock.now() < giveUpAt) {
    let timer: Timer | undefined;
    const beatDue = new Promise<void>((resolve) => {
      timer = clock.setTimer(heartbeatIntervalMs, resolve, { keepAlive: true });
    });
    await Promise.race([done, beatDue]);
    timer?.cancel();
    if (!finished) await heartbeat().catch(() => {}); // REBALANCE_IN_PROGRESS is the expected answer
  }
  if (!finished)
    log.warn('revoke: in-flight work did not settle before the rebalance timeout; its results will be dropped');
}
