import { describe, expect, it } from 'vitest';
import { nodeRuns } from '../../../src/brokers/platformatic/platformatic.js';

/** Lets every queued promise callback run. */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A fetch's callback, as the client's consumer passes it. */
type Answer = (error: Error | null) => void;

/** The client's `consumer:fetches` tracing channel, as the test publishes on it. */
interface Traced {
  traceCallback(fn: (cb: Answer) => void, at: number, context: object, self: unknown, cb: () => void): void;
}

// The client's tracing channel is published the way its consumer publishes a fetch: `traceCallback` on it.
describe.skipIf(!nodeRuns(process.versions.node))('fetches under way (@platformatic/kafka)', () => {
  async function load() {
    const { pk } = await import('../../../src/brokers/platformatic/client.js');
    const { countFetches, fetchesLanded } = await import('../../../src/brokers/platformatic/fetches.js');
    countFetches();
    const channel = pk.consumerFetchesChannel as unknown as Traced;
    const client = {};
    /** Sends a fetch of `client` as the client's consumer does; `fetch` gets its callback. */
    const send = (fetch: (cb: Answer) => void) => channel.traceCallback(fetch, 0, { client }, undefined, () => {});
    /** Sends a fetch whose answer the test gives (the returned function). */
    const pending = () => {
      let answer: Answer = () => {};
      send((cb) => (answer = cb));
      return () => answer(null);
    };
    /** Whether `fetchesLanded` resolved, asked now, once every queued callback ran. */
    const landed = async () => {
      let done = false;
      void fetchesLanded(client, 3_600_000).then(() => (done = true));
      await settled();
      return () => done;
    };
    return { send, pending, landed };
  }

  it('waits for a fetch sent until its answer was handled', async () => {
    const { pending, landed } = await load();
    const answer = pending();
    const done = await landed();
    expect(done()).toBe(false);
    answer();
    await settled();
    expect(done()).toBe(true);
  });

  it('a fetch that fails with an answer is counted once', async () => {
    const { send, pending, landed } = await load();
    send((cb) => cb(new Error('refused')));
    const answer = pending();
    const done = await landed();
    expect(done()).toBe(false); // the second fetch is still under way
    answer();
    await settled();
    expect(done()).toBe(true);
  });

  it('a fetch that throws before it is sent is not waited for', async () => {
    const { send, landed } = await load();
    expect(() =>
      send(() => {
        throw new Error('no connection');
      }),
    ).toThrow('no connection');
    const done = await landed();
    expect(done()).toBe(true);
  });
});
