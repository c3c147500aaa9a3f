/**
 * What a {@link Scheduler} queues: anything that carries its partition key.
 *
 * @category Dispatch
 */
export interface Keyed {
  /** The partition key; `undefined` for a keyless delivery, which any free worker may take. */
  readonly key: string | undefined;
}

/**
 * The queue of one subscription's jobs: what may run next, and what a finished job frees.
 *
 * @category Dispatch
 */
export interface Scheduler<J extends Keyed> {
  /** Queues a job; true when it is runnable at once (not waiting behind its key). */
  push(job: J): boolean;
  /** The next job a free worker may run, or undefined. */
  next(): J | undefined;
  /** A job finished: whatever waited behind it becomes runnable. */
  done(job: J): void;
}

/**
 * How deliveries are spread over n workers: a strategy object (not a subclass) that makes the queue the
 * workers draw from. Made by {@link pool} and {@link lanes}; a subscriber gets a pool from `workers(n)`
 * and lanes from `workersByKey(n)`.
 *
 * @category Dispatch
 */
export interface DispatchStrategy {
  /** `pool`: one queue, any order; `lanes`: one key's deliveries in order. */
  readonly name: 'pool' | 'lanes';
  /** Workers in all: the most deliveries in flight. */
  readonly workers: number;
  /** Makes an empty queue of this strategy, for one subscription. */
  scheduler<J extends Keyed>(): Scheduler<J>;
}

/**
 * n long-lived workers over one FIFO queue: deliveries start in the order read and complete in any order.
 *
 * @example
 * ```ts
 * const q = pool(4).scheduler<{ key: string | undefined }>();
 * q.push({ key: 'a' }); q.push({ key: 'a' });
 * q.next(); q.next(); // both runnable at once: a pool ignores keys
 * ```
 *
 * @category Dispatch
 */
export function pool(n: number): DispatchStrategy {
  return { name: 'pool', workers: n, scheduler: <J extends Keyed>() => new FifoScheduler<J>() };
}

/**
 * n workers as n sequential lanes by key: a key's deliveries run one at a time, in order; different keys
 * run at once; keyless deliveries go to whichever worker is free. A lane is bound to a key only while
 * that key has work in flight: a free worker takes the oldest delivery whose key is not running, so no
 * worker idles behind another key's backlog (a fixed hash(key) mod n lane would: with 100 lanes, 100
 * distinct keys land in only ~63 of them).
 *
 * @example
 * ```ts
 * const q = lanes(4).scheduler<{ key: string | undefined }>();
 * const first = { key: 'a' };
 * q.push(first); // true: runnable
 * q.push({ key: 'a' }); // false: waits behind the first
 * q.next(); // the first
 * q.done(first); // the second becomes runnable
 * ```
 *
 * @category Dispatch
 */
export function lanes(n: number): DispatchStrategy {
  return { name: 'lanes', workers: n, scheduler: <J extends Keyed>() => new KeyedScheduler<J>() };
}

/** A FIFO queue: exported for the benchmarks. */
export class FifoScheduler<J extends Keyed> implements Scheduler<J> {
  private ready: (J | undefined)[] = [];
  /** The next job's index: taking one is O(1) however deep the queue (`shift` would move them all). */
  private head = 0;
  /**
   * Where the next job goes. A queue that drains starts again at 0 over the same array: truncating it
   * (`length = 0`) on every drain, which a single worker does on every job, cost a runtime call each time.
   */
  private tail = 0;
  push(job: J): boolean {
    this.ready[this.tail++] = job;
    return true;
  }
  next(): J | undefined {
    if (this.head === this.tail) return undefined;
    const job = this.ready[this.head];
    this.ready[this.head++] = undefined;
    if (this.head === this.tail) {
      this.head = 0;
      this.tail = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.tail) {
      this.ready = this.ready.slice(this.head, this.tail);
      this.tail -= this.head;
      this.head = 0;
    }
    return job;
  }
  done(): void {}
}

/**
 * Keys with work in flight map to the jobs waiting behind the running one (`null` while none wait, so a
 * key's first job allocates nothing). Only a key's head job is ever in `ready`.
 */
class KeyedScheduler<J extends Keyed> implements Scheduler<J> {
  private readonly ready: J[] = [];
  private readonly busy = new Map<string, J[] | null>();

  push(job: J): boolean {
    const key = job.key;
    const waiting = key === undefined ? undefined : this.busy.get(key);
    if (waiting === undefined) {
      if (key !== undefined) this.busy.set(key, null);
      this.ready.push(job);
      return true;
    }
    if (waiting === null) this.busy.set(key!, [job]);
    else waiting.push(job);
    return false;
  }

  next(): J | undefined {
    return this.ready.shift();
  }

  done(job: J): void {
    const key = job.key;
    if (key === undefined) return;
    const waiting = this.busy.get(key);
    if (!waiting) return void this.busy.delete(key);
    this.ready.push(waiting.shift()!);
    if (waiting.length === 0) this.busy.set(key, null);
  }
}
