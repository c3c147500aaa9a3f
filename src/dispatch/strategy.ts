import { fnv1a32 } from '../core/hash.js';

/**
 * How deliveries are spread over workers: a set of FIFO queues, the workers that drain each, and the
 * choice of queue for a key. A strategy object rather than a subclass, so one worker engine serves both.
 */
export interface DispatchStrategy {
  readonly name: 'pool' | 'lanes';
  /** Workers in all: the most deliveries in flight. */
  readonly workers: number;
  readonly queues: number;
  readonly workersPerQueue: number;
  /** The queue for a delivery with this partition key. */
  route(key: string | undefined): number;
}

/** n long-lived workers over one queue: completion in any order. */
export function pool(n: number): DispatchStrategy {
  return { name: 'pool', workers: n, queues: 1, workersPerQueue: n, route: () => 0 };
}

/**
 * n sequential lanes: lane = FNV-1a(key) mod n, so one key never reorders and keys of different lanes run
 * at once; keyless deliveries rotate over the lanes.
 */
export function lanes(n: number): DispatchStrategy {
  let next = 0;
  return {
    name: 'lanes',
    workers: n,
    queues: n,
    workersPerQueue: 1,
    route: (key) => (key === undefined ? next++ % n : fnv1a32(key) % n),
  };
}
