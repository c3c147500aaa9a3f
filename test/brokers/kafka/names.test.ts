import { AssignerProtocol, type Cluster } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { stickyAssigner } from '../../../src/brokers/kafka/group/assigner.js';
import { MemberClaim } from '../../../src/brokers/kafka/group/claims.js';
import { headersFrom } from '../../../src/brokers/kafka/convert.js';

/** Names of Object.prototype's properties: Kafka allows each as a topic name, and any as a header name. */
const PROTO_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];

describe('kafka: topic and header names are names like any other', () => {
  it('assigns the partitions of topics named like Object.prototype properties', async () => {
    const partitions: Record<string, number> = { constructor: 2, toString: 1, hasOwnProperty: 2, orders: 2 };
    // Not `__proto__`: kafkajs's own MemberAssignment.decode (Object.assign) loses a topic of that name.
    const topics = ['constructor', 'toString', 'hasOwnProperty', 'orders'];
    const cluster = {
      addMultipleTargetTopics: async () => {},
      findTopicPartitionMetadata: (topic: string) =>
        Array.from(
          { length: Object.getOwnPropertyDescriptor(partitions, topic)!.value as number },
          (_, partitionId) => ({ partitionId }),
        ),
    } as unknown as Cluster;
    const assigner = stickyAssigner(new MemberClaim())({ cluster, groupId: 'g', logger: undefined as never });
    const members = ['m1', 'm2'].map((memberId) => ({
      memberId,
      memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }),
    }));
    const result = await assigner.assign({ members, topics });
    const got = new Map<string, number[]>();
    for (const { memberAssignment } of result) {
      const decoded = AssignerProtocol.MemberAssignment.decode(memberAssignment)!;
      for (const topic of Object.keys(decoded.assignment))
        got.set(topic, [
          ...(got.get(topic) ?? []),
          ...(Object.getOwnPropertyDescriptor(decoded.assignment, topic)!.value as number[]),
        ]);
    }
    expect(new Map([...got].map(([t, ps]) => [t, ps.sort()]))).toEqual(
      new Map(
        topics.map((t) => [
          t,
          Array.from({ length: Object.getOwnPropertyDescriptor(partitions, t)!.value as number }, (_, i) => i),
        ]),
      ),
    );
  });

  it('keeps headers named like Object.prototype properties, as own string headers', () => {
    const raw = Object.create(null) as Record<string, Buffer>;
    for (const name of PROTO_NAMES) raw[name] = Buffer.from(`v-${name}`);
    const headers = headersFrom(raw);
    expect(Object.keys(headers).sort()).toEqual([...PROTO_NAMES].sort());
    for (const name of PROTO_NAMES) expect(Object.getOwnPropertyDescriptor(headers, name)?.value).toBe(`v-${name}`);
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
  });
});
