/**
 * What the simulated worlds share: the start of simulated time, the paced subscribers that `app.send`
 * feeds (their pace settings, by name), a broker whose consumers a dead (or cut off) process stops using,
 * and the turns of the event loop a world waits for.
 */
import {
  MemoryBroker,
  subscriber,
  type Broker,
  type SubscriberSpec,
  type ConsumeRequest,
  type Consumer,
  type Context,
  type HandlerResult,
} from '../../src/index.js';
import { RATES } from './checkers.js';

export const T0 = Date.UTC(2026, 0, 1);

/** The options key under which the engine takes injected faults. */
export const FAULTS = Symbol.for('sluice.faults');

/** The paced subscribers `app.send` feeds: a batch, a debounce, batches held to a per-minute rate, drops. */
export const SEND_SUBS = ['bat', 'deb', 'pm', 'drp'] as const;
export type SendSub = (typeof SEND_SUBS)[number];

type Handler = (payload: unknown, ctx: Context) => Promise<HandlerResult>;

/** A paced subscriber of `SEND_SUBS`, named `sub`, reading `topic`, with its pace, workers and retries. */
export function sendSubscriber(sub: SendSub, topic: string, handler: Handler): SubscriberSpec<unknown> {
  const retry = { attempts: 3, backoff: { initialMs: 100, maxMs: 100 } };
  const b = subscriber(topic, handler).name(sub);
  switch (sub) {
    case 'bat':
      return b
        .pace({ batch: { max: 4, wait: 1000 }, dedup: '1 day' })
        .retry(retry)
        .build();
    case 'deb':
      return b
        .pace({ debounce: { window: 500, maxWait: 2000 }, dedup: '1 day' })
        .retry(retry)
        .build();
    case 'pm':
      // Pace II: batches held to a per-minute rate (waiting starts), ordered, keys in turns.
      return b
        .pace({
          batch: { max: 2, wait: 400 },
          perMinute: RATES.pm.max,
          order: ({ event }) => (event as { n: number }).n % 3,
          turns: 'key',
          dedup: '1 day',
        })
        .retry(retry)
        .build();
    case 'drp':
      return b
        .pace({ drop: { max: RATES.drp.max, per: RATES.drp.perMs }, dedup: '1 day' })
        .workers(2)
        .retry(retry)
        .build();
  }
}

/**
 * A broker for one process: once `cut()` says so, its consumers take nothing, commit nothing and hear of no
 * revoke — the process died, or was cut off from the group — and the world closes them, so that they leave
 * the group without settling anything; a revoke under way when `whenCut` resolves is over for the group
 * then (as a member that stopped answering is dropped from it). `onConsumer` is given each consumer the
 * shared broker made.
 */
export function cutBroker(
  shared: MemoryBroker,
  cut: () => boolean,
  onConsumer: (inner: Consumer) => void,
  whenCut: Promise<void> = new Promise<void>(() => {}),
): Broker {
  return {
    kind: 'memory',
    connect: () => shared.connect(),
    close: () => shared.close(),
    publish: (topic, value, options) => shared.publish(topic, value, options),
    partitionOf: (key, partitions) => shared.partitionOf(key, partitions),
    partitionCount: (topic) => shared.partitionCount(topic),
    async consume(request: ConsumeRequest): Promise<Consumer> {
      const inner = await shared.consume({
        ...request,
        onReadable: () => (cut() ? undefined : request.onReadable()),
        onRevoke: (partitions) => (cut() ? Promise.resolve() : Promise.race([request.onRevoke(partitions), whenCut])),
        ...(request.onAssign
          ? { onAssign: (partitions: readonly number[]) => (cut() ? Promise.resolve() : request.onAssign!(partitions)) }
          : {}),
      });
      const consumer: Consumer = {
        take: (max, perPartition) => (cut() ? [] : inner.take(max, perPartition)),
        backlog: () => inner.backlog(),
        lag: () => inner.lag(),
        assigned: () => inner.assigned(),
        pause: (p) => inner.pause(p),
        resume: (p) => inner.resume(p),
        commit: (p, offset) => (cut() ? undefined : inner.commit(p, offset)),
        flush: () => inner.flush(),
        close: () => inner.close(),
      };
      onConsumer(inner);
      return consumer;
    },
  };
}

export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await Promise.resolve();
  await Promise.resolve();
  return settled;
}
