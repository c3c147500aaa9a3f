import type { Clock } from '../../core/ports.js';

/**
 * Answers with which a broker says only that it has not caught up with a topic just created: its metadata
 * not out yet (UNKNOWN_TOPIC_OR_PARTITION), its partitions' leaders not yet elected or known
 * (LEADER_NOT_AVAILABLE, NOT_LEADER_FOR_PARTITION). A single node under load gives them for a moment after a
 * topic is created, and kafkajs's admin client gives up on them in two places: `createTopics` waiting for
 * leaders (it waits out LEADER_NOT_AVAILABLE only) and `fetchTopicOffsets` (it asks again on
 * UNKNOWN_TOPIC_OR_PARTITION only).
 */
export const CATCHING_UP: ReadonlySet<string> = new Set([
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
]);

/** How many times {@link askAgain} asks at most, and its first and longest pause between two. */
export const ASK_ATTEMPTS = 8;
const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 1_000;

/** Whether `error` is one of kafkajs's errors (or its aggregate of them) that say the broker is catching up. */
export function isCatchingUp(error: unknown): boolean {
  const { type, errors } = (error ?? {}) as { type?: unknown; errors?: unknown };
  if (Array.isArray(errors) && errors.length > 0) return errors.every(isCatchingUp);
  return typeof type === 'string' && CATCHING_UP.has(type);
}

/**
 * `ask()`, asked again (after 100 ms, doubling to at most a second, on `clock`) while it fails with an answer
 * that says the broker is catching up with a new topic, up to `attempts` times in all
 * ({@link ASK_ATTEMPTS} by default); any other failure, or the last, is thrown. `ask` must be safe to repeat
 * (creating a topic that exists is).
 */
export async function askAgain<T>(ask: () => Promise<T>, clock: Clock, attempts = ASK_ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ask();
    } catch (error) {
      if (attempt >= attempts || !isCatchingUp(error)) throw error;
      await pauseAfter(attempt, clock);
    }
  }
}

/**
 * The pause before asking again after ask number `attempt` (from 1): 100 ms, doubling to at most a second,
 * on `clock` (it holds the process: the caller awaits it).
 */
export function pauseAfter(attempt: number, clock: Clock): Promise<void> {
  const pauseMs = Math.min(LONGEST_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (attempt - 1));
  return new Promise<void>((resolve) => clock.setTimer(pauseMs, resolve, { keepAlive: true }));
}

/** How many times {@link partitionsReaching} asks at most: a count afresh four times, over 0.7 s. */
const PARTITION_ASKS = 5;

/**
 * The topic's partition count, for a message pinned to `partition`: `count(false)` as the client knows it, then
 * afresh (`count(true)`, paced as {@link askAgain} paces) while the count does not reach past `partition`. A
 * broker lists partitions just added a moment after the admin's `createPartitions` resolved, and a client's
 * metadata later still: a partition is called one the topic does not have only when the broker still says so.
 * A partition no count makes valid (negative, not an integer) is counted once.
 */
export async function partitionsReaching(
  partition: number,
  count: (fresh: boolean) => Promise<number>,
  clock: Clock,
): Promise<number> {
  let n = await count(false);
  if (!Number.isInteger(partition) || partition < 0) return n; // no count makes it one: not asked again
  for (let attempt = 1; partition >= n && attempt < PARTITION_ASKS; attempt++) {
    if (attempt > 1) await pauseAfter(attempt - 1, clock);
    n = await count(true);
  }
  return n;
}
