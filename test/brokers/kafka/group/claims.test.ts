import fc from 'fast-check';
import { AssignerProtocol, type Cluster } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { PROTOCOL_NAME, stickyAssigner } from '../../../../src/brokers/kafka/group/assigner.js';
import {
  CLAIM_VERSION,
  MemberClaim,
  NO_CLAIM,
  decodeClaim,
  encodeClaim,
} from '../../../../src/brokers/kafka/group/claims.js';

const claimArb = fc.record({
  generation: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
  owned: fc
    .uniqueArray(
      fc.tuple(
        fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('__proto__', 'constructor', 'ordres-ü-日本')),
        fc.array(fc.integer({ min: 0, max: 2 ** 31 - 1 }), { maxLength: 50 }),
      ),
      { maxLength: 8, selector: ([topic]) => topic },
    )
    .map((entries) => new Map(entries)),
});

describe('kafka: a member’s claim of what it owns', () => {
  it('reads back what it wrote', () => {
    fc.assert(
      fc.property(claimArb, (claim) => {
        expect(decodeClaim(encodeClaim(claim))).toEqual(claim);
      }),
    );
  });

  it('is a claim to nothing when empty (an older member), cut short, or of a version before the first', () => {
    expect(decodeClaim(undefined)).toBe(NO_CLAIM);
    expect(decodeClaim(Buffer.alloc(0))).toBe(NO_CLAIM);
    const whole = encodeClaim({ generation: 4, owned: new Map([['orders', [0, 3]]]) });
    for (let n = 1; n < whole.length; n++) expect(decodeClaim(whole.subarray(0, n))).toBe(NO_CLAIM);
    const old = Buffer.from(whole);
    old.writeInt16BE(CLAIM_VERSION - 1, 0);
    expect(decodeClaim(old)).toBe(NO_CLAIM);
    const negative = encodeClaim({ generation: 4, owned: new Map([['orders', [0]]]) });
    negative.writeInt32BE(-5, negative.length - 4);
    expect(decodeClaim(negative)).toBe(NO_CLAIM);
  });

  it('reads what it knows of a later version, which may add fields after it', () => {
    const claim = { generation: 9, owned: new Map([['orders', [2, 5]]]) };
    const later = Buffer.concat([encodeClaim(claim), Buffer.from([1, 2, 3])]);
    later.writeInt16BE(CLAIM_VERSION + 1, 0);
    expect(decodeClaim(later)).toEqual(claim);
  });

  it('never throws on bytes it cannot read', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const claim = decodeClaim(Buffer.from(bytes));
        for (const ps of claim.owned.values()) for (const p of ps) expect(p).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('tracks the last assignment, and its generation once a heartbeat or commit tells it', () => {
    const member = new MemberClaim();
    expect(member.claim()).toEqual({ generation: -1, owned: new Map() });
    member.assigned({ orders: [1, 2] });
    expect(member.claim()).toEqual({ generation: 0, owned: new Map([['orders', [1, 2]]]) });
    member.confirmed(7);
    member.confirmed(8); // only the first answer after an assignment is its generation
    expect(member.claim().generation).toBe(7);
    member.assigned({ orders: [3] });
    expect(member.claim()).toEqual({ generation: 8, owned: new Map([['orders', [3]]]) }); // newer than 7, at least
    member.confirmed(11);
    expect(member.claim().generation).toBe(11);
  });
});

describe('kafka: the sticky assigner through kafkajs’s protocol', () => {
  const cluster = (partitions: Record<string, number>) =>
    ({
      addMultipleTargetTopics: async () => {},
      findTopicPartitionMetadata: (topic: string) =>
        Array.from({ length: partitions[topic] ?? 0 }, (_, partitionId) => ({ partitionId })),
    }) as unknown as Cluster;

  it('sends its claim in its metadata, and as leader keeps each member’s; an older member is dealt the rest', async () => {
    const mine = new MemberClaim();
    mine.assigned({ orders: [4, 5] });
    mine.confirmed(3);
    const assigner = stickyAssigner(mine)({
      cluster: cluster({ orders: 6 }),
      groupId: 'g',
      logger: undefined as never,
    });
    const own = assigner.protocol({ topics: ['orders'] });
    expect(own.name).toBe(PROTOCOL_NAME);
    const other = new MemberClaim();
    other.assigned({ orders: [0, 1] });
    const members = [
      { memberId: 'b', memberMetadata: own.metadata },
      {
        memberId: 'a',
        memberMetadata: stickyAssigner(other)({
          cluster: cluster({}),
          groupId: 'g',
          logger: undefined as never,
        }).protocol({ topics: ['orders'] }).metadata,
      },
      {
        memberId: 'c', // an older Sluice: no claim
        memberMetadata: AssignerProtocol.MemberMetadata.encode({
          version: 0,
          topics: ['orders'],
          userData: Buffer.alloc(0),
        }),
      },
      {
        memberId: 'd', // a claim it cannot read: it owns nothing
        memberMetadata: AssignerProtocol.MemberMetadata.encode({
          version: 0,
          topics: ['orders', 'quiet'],
          userData: Buffer.from([0, 1, 0]),
        }),
      },
    ];
    const result = await assigner.assign({ members, topics: ['orders'] });
    const got = new Map(
      result.map(({ memberId, memberAssignment }) => [
        memberId,
        AssignerProtocol.MemberAssignment.decode(memberAssignment)!.assignment,
      ]),
    );
    expect(got.get('a')).toEqual({ orders: [0, 1] });
    expect(got.get('b')).toEqual({ orders: [4, 5] }); // 6 over 4: the two that keep 2 are the two of 2
    expect(got.get('c')).toEqual({ orders: [2] });
    expect(got.get('d')).toEqual({ orders: [3], quiet: [] });
  });
});
