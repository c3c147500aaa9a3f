import { describe, expect, it } from 'vitest';
import { OffsetCommits } from '../../../../src/brokers/kafka/consumer/offset-commits.js';
import { OwnedPartitions } from '../../../../src/brokers/kafka/consumer/owned-partitions.js';
import { ManualClock } from '../../../../src/testing/manual-clock.js';
import { silentLogger } from '../../../../src/testing/memory-logger.js';

/** A member's partitions of topic `t`, and every revoke the app was told of (each sorted). */
function member() {
  const revokes: number[][] = [];
  const partitions: OwnedPartitions = new OwnedPartitions(
    't',
    new OffsetCommits(
      't',
      silentLogger,
      () => partitions.due(),
      () => undefined,
    ),
    async (revoked) => {
      revokes.push([...revoked].sort((a, b) => a - b));
    },
    new ManualClock(),
  );
  return { partitions, revokes };
}

describe('kafka: the partitions a member owns, revoked', () => {
  it('a rebalance revokes every partition of the assignment, those nothing was fetched of too, once', async () => {
    const { partitions, revokes } = member();
    partitions.assign([0, 1, 2]);
    partitions.open(1); // a batch of partition 1 arrived; nothing was published to 0 and 2
    await partitions.revokeAll();
    await partitions.revokeAll(); // the same rebalance seen again
    expect(revokes).toEqual([[0, 1, 2]]);
  });

  it('an assignment that comes with no rebalance seen before revokes the last one, fetched or not', async () => {
    const { partitions, revokes } = member();
    partitions.assign([0, 1, 2]);
    partitions.open(2);
    const { stale, revoked } = partitions.assign([1, 3]);
    await revoked;
    expect(stale.sort()).toEqual([0, 1, 2]);
    expect(revokes).toEqual([[0, 1, 2]]);
    await partitions.revokeAll();
    expect(revokes).toEqual([
      [0, 1, 2],
      [1, 3],
    ]);
  });

  it('an assignment after a rebalance seen revokes nothing more', async () => {
    const { partitions, revokes } = member();
    partitions.assign([0, 1]);
    await partitions.revokeAll();
    const { stale, revoked } = partitions.assign([0, 2]);
    await revoked;
    expect({ stale, revokes }).toEqual({ stale: [], revokes: [[0, 1]] });
  });
});
