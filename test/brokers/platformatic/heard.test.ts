import { afterEach, describe, expect, it, vi } from 'vitest';
import { nodeRuns } from '../../../src/brokers/platformatic/platformatic.js';

/** A request's callback, as the client's consumer passes it. */
type Answer = (error: Error | null) => void;

/** One of the client's tracing channels, as the test publishes on it. */
interface Traced {
  traceCallback(fn: (cb: Answer) => void, at: number, context: object, self: unknown, cb: () => void): void;
}

// The client's tracing channels are published the way its consumer publishes a heartbeat or a join.
describe.skipIf(!nodeRuns(process.versions.node))('when the coordinator heard a member (@platformatic/kafka)', () => {
  afterEach(() => vi.useRealTimers());

  async function load() {
    const { pk } = await import('../../../src/brokers/platformatic/client.js');
    const { heardAt, noteHeard } = await import('../../../src/brokers/platformatic/heard.js');
    noteHeard();
    const heartbeats = pk.consumerHeartbeatChannel as unknown as Traced;
    const group = pk.consumerGroupChannel as unknown as Traced;
    /** Begins a request of `operation` on `channel` now; answering it is the test's. */
    const begin = (channel: Traced, client: object, operation: string) => {
      let answer: Answer = () => {};
      channel.traceCallback(
        (cb) => (answer = cb),
        0,
        { client, operation },
        undefined,
        () => {},
      );
      return (error: Error | null = null) => answer(error);
    };
    return { heardAt, heartbeats, group, begin };
  }

  it('an answered heartbeat counts from when it was sent, not from when its answer was read', async () => {
    const { heardAt, heartbeats, begin } = await load();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    const client = {};
    expect(heardAt(client)).toBe(0);
    const answer = begin(heartbeats, client, 'heartbeat');
    vi.setSystemTime(1_060_000); // the process was frozen for a minute with the answer unread
    answer();
    expect(heardAt(client)).toBe(1_000_000);
  });

  it('a refused heartbeat, or a request that keeps no session, is not hearing', async () => {
    const { heardAt, heartbeats, group, begin } = await load();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(2_000_000);
    const client = {};
    begin(heartbeats, client, 'heartbeat')(new Error('UNKNOWN_MEMBER_ID'));
    begin(group, client, 'leaveGroup')();
    begin(group, client, 'findGroupCoordinator')();
    expect(heardAt(client)).toBe(0);
    begin(group, client, 'joinGroup')();
    expect(heardAt(client)).toBe(2_000_000);
  });

  it('a late answer to an older request does not move it back', async () => {
    const { heardAt, heartbeats, begin } = await load();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(3_000_000);
    const client = {};
    const older = begin(heartbeats, client, 'consumerGroupHeartbeat');
    vi.setSystemTime(3_001_000);
    begin(heartbeats, client, 'consumerGroupHeartbeat')();
    older();
    expect(heardAt(client)).toBe(3_001_000);
  });
});
