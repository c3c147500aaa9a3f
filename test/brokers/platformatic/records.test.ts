import { describe, expect, it } from 'vitest';
import { nodeRuns } from '../../../src/brokers/platformatic/platformatic.js';

describe.skipIf(!nodeRuns(process.versions.node))('refusals on @platformatic/kafka', () => {
  const load = async () => {
    const { pk } = await import('../../../src/brokers/platformatic/client.js');
    const { isRefused, refusalOf } = await import('../../../src/brokers/platformatic/records.js');
    return { pk, isRefused, refusalOf };
  };
  /** An error as the client raises the broker's answer `apiId` to a produce request. */
  const answered = (pk: Awaited<ReturnType<typeof load>>['pk'], apiId: string) =>
    new pk.MultipleErrors('Producing messages failed.', [
      Object.assign(new Error(`the broker answered ${apiId}`), { apiId }),
    ]);

  it('tells a batch the broker refused for good from one that failed for a while', async () => {
    const { pk, isRefused } = await load();
    expect(isRefused(answered(pk, 'MESSAGE_TOO_LARGE'))).toBe(true);
    expect(isRefused(answered(pk, 'NOT_LEADER_OR_FOLLOWER'))).toBe(false);
    expect(isRefused(new Error('connection closed'))).toBe(false);
  });

  it('names the topic of a publish refused, and nothing for one that may pass later', async () => {
    const { pk, refusalOf } = await load();
    expect(refusalOf('orders', answered(pk, 'MESSAGE_TOO_LARGE'))).toMatchObject({
      code: 'PUBLISH_REFUSED',
      message: expect.stringContaining('"orders"'),
    });
    expect(refusalOf('orders', new Error('connection closed'))).toBeUndefined();
    expect(refusalOf('no topic!', new Error('refused'))).toMatchObject({ code: 'PUBLISH_REFUSED' });
  });
});
