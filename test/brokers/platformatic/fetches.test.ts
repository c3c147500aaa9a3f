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
    return { channel, fetchesLanded };
  }

  it('waits for a fetch sent until its answer was handled', async () => {
    const { channel, fetchesLanded } = await load();
    const client = {};
    let answer: (() => void) | undefined;
    channel.traceCallback(
      (cb) => (answer = () => cb(null)),
      0,
      { client },
      undefined,
      () => {},
    );
    let landed = false;
    void fetchesLanded(client, 3_600_000).then(() => (landed = true));
    await settled();
    expect(landed).toBe(false);
    answer!();
    await settled();
    expect(landed).toBe(true);
  });

  it('a fetch that fails with an answer is counted once', async () => {
    const { channel, fetchesLanded } = await load();
    const client = {};
    channel.traceCallback(
      (cb) => cb(new Error('refused')),
      0,
      { client },
      undefined,
      () => {},
    );
    let answer: (() => void) | undefined;
    channel.traceCallback(
      (cb) => (answer = () => cb(null)),
      0,
      { client },
      undefined,
      () => {},
    );
    let landed = false;
    void fetchesLanded(client, 3_600_000).then(() => (landed = true));
    await settled();
    expect(landed).toBe(false); // the second fetch is still under way
    answer!();
    await settled();
    expect(landed).toBe(true);
  });

  it('a fetch that throws before it is sent is not waited for', async () => {
    const { channel, fetchesLanded } = await load();
    const client = {};
    expect(() =>
      channel.traceCallback(
        () => {
          throw new Error('no connection');
        },
        0,
        { client },
        undefined,
        () => {},
      ),
    ).toThrow('no connection');
    let landed = false;
    void fetchesLanded(client, 3_600_000).then(() => (landed = true));
    await settled();
    expect(landed).toBe(true);
  });
});
