/**
 * The consumer group protocol of KIP-848 on @platformatic/kafka: a member joining moves only the partitions
 * that change owner. The member that keeps a partition neither revokes it (its work, its pace shard stay)
 * nor reads it again; under the classic protocol every partition is revoked and assigned again.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { PlatformaticKafkaBroker } from '../../src/brokers/platformatic/index.js';
import type { Consumer, ConsumeRequest, InboundMessage } from '../../src/index.js';
import { uniqueGroup, uniqueTopic } from '../contract/broker-contract.js';
import { closePlatformatic, platformaticRuns, testPlatformatic } from './clients.js';
import { kafkaBrokers } from './fixture.js';

const client = (groupProtocol: 'classic' | 'consumer'): PlatformaticKafkaBroker => testPlatformatic(groupProtocol);

/** A member that records its revokes and assigns, and takes every message it is handed. */
class Member {
  readonly revoked: number[][] = [];
  readonly assigned: number[][] = [];
  readonly taken: InboundMessage[] = [];
  consumer!: Consumer;
  private waiters: (() => void)[] = [];

  constructor(
    readonly broker: PlatformaticKafkaBroker,
    readonly topic: string,
    readonly group: string,
  ) {}

  async join(): Promise<this> {
    const request: ConsumeRequest = {
      topic: this.topic,
      group: this.group,
      onReadable: () => this.drain(),
      onRevoke: (p) => {
        this.revoked.push([...p].sort());
        this.wake();
        return Promise.resolve();
      },
      onAssign: (p) => {
        this.assigned.push([...p].sort());
        this.wake();
        return Promise.resolve();
      },
    };
    this.consumer = await this.broker.consume(request);
    this.drain();
    return this;
  }

  private drain(): void {
    if (this.consumer === undefined) return;
    for (let batch = this.consumer.take(100); batch.length > 0; batch = this.consumer.take(100))
      this.taken.push(...batch);
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once `done()` holds, checked on every revoke and every message taken. */
  async until(done: () => boolean): Promise<void> {
    while (!done()) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

const PARTITIONS = 4;

async function scenario(protocol: 'classic' | 'consumer'): Promise<{ a: Member; b: Member }> {
  const topic = uniqueTopic(`kip848-${protocol}`);
  const group = uniqueGroup(`kip848-${protocol}`);
  const publisher = client(protocol);
  await publisher.createTopic(topic, PARTITIONS);
  for (let partition = 0; partition < PARTITIONS; partition++)
    for (let n = 0; n < 2; n++) await publisher.publish(topic, { partition, n }, { partition });
  const a = await new Member(client(protocol), topic, group).join();
  await a.until(() => a.taken.length === 2 * PARTITIONS);
  // The first message of each partition is committed, the second not: a member that read a partition it
  // keeps again from the group's offset would hand the second out twice.
  for (let partition = 0; partition < PARTITIONS; partition++) a.consumer.commit(partition, 1);
  await a.consumer.flush();
  const b = await new Member(client(protocol), topic, group).join();
  await a.until(
    () => a.revoked.length > 0 && a.consumer.assigned().length + b.consumer.assigned().length === PARTITIONS,
  );
  return { a, b };
}

describe.skipIf(!kafkaBrokers || !platformaticRuns)(
  'kafka on @platformatic/kafka: a join under each group protocol',
  () => {
    afterAll(async () => {
      await closePlatformatic();
    });

    it('consumer protocol (KIP-848): only the partitions the new member gets are revoked; the kept ones are not read again, when it joins or leaves', async () => {
      const { a, b } = await scenario('consumer');
      const moved = [...b.consumer.assigned()].sort();
      const kept = [...a.consumer.assigned()].sort();
      expect(moved.length).toBeGreaterThan(0);
      expect(kept.length).toBeGreaterThan(0);
      expect(a.revoked).toEqual([moved]);
      expect(a.assigned).toEqual([[0, 1, 2, 3]]);
      // B reads the moved partitions from the group's offset: their second messages again.
      await b.until(() => b.taken.length === moved.length);
      // B leaves: A gets the moved partitions back, and keeps the others without reading them again (the
      // client reads every partition again from the group's offset when one is added).
      await b.consumer.close();
      await a.until(() => a.consumer.assigned().length === PARTITIONS);
      expect(a.revoked).toEqual([moved]);
      expect(a.assigned).toEqual([[0, 1, 2, 3], moved]);
      await a.until(() => a.taken.length >= 2 * PARTITIONS + moved.length);
      const partition = kept[0]!;
      const before = a.taken.length;
      await a.broker.publish(a.topic, { partition, n: 2 }, { partition });
      await a.until(() => a.taken.length > before);
      expect(a.taken.slice(before).map((m) => [m.partition, m.offset])).toEqual([[partition, 2]]);
      expect(a.taken.filter((m) => kept.includes(m.partition))).toHaveLength(2 * kept.length + 1);
    });

    it('classic protocol: every partition is revoked and assigned again (eager)', async () => {
      const { a, b } = await scenario('classic');
      expect(a.revoked[0]).toEqual([0, 1, 2, 3]);
      expect([...a.consumer.assigned(), ...b.consumer.assigned()].sort()).toEqual([0, 1, 2, 3]);
      expect(a.assigned.length).toBe(2);
    });
  },
);
