/**
 * A paced subscriber's intake: how many deliveries it has being appended at once, and of which partitions.
 * Under a store owned by partition each partition's events go to its own shard, whose appends are journaled
 * one transaction after another: intake keeps the shards of several partitions busy at once, not one.
 */
import { describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  MemoryBroker,
  memoryStore,
  silentLogger,
  subscriber,
  type ShardLog,
  type Store,
} from '../../src/index.js';
import { PACE_INTAKE, PACE_INTAKE_BYTES, PACE_INTAKE_PER_PARTITION } from '../../src/pipeline/intake.js';
import { Gate, turns } from '../helpers.js';

const PARTITIONS = 3;
/** More than the intake takes of a partition at once. */
const PER_PARTITION = PACE_INTAKE_PER_PARTITION + 500;

/** `store` whose shard logs' appends are made at once but reported durable only once `gate` opens. */
function held(store: Store, gate: Gate, underWay: number[]): Store {
  const hold = (log: ShardLog): ShardLog => {
    const append = log.append.bind(log);
    log.append = (record) => {
      const durable = append(record);
      underWay[log.shard]!++;
      return gate.promise.then(async () => {
        underWay[log.shard]!--;
        return durable;
      });
    };
    return log;
  };
  return {
    shards: store.shards,
    ownership: store.ownership,
    snapshotEvery: store.snapshotEvery,
    routes: store.routes,
    open: (owner) => store.open(owner),
    close: () => store.close(),
    log: (shard) => store.log(shard),
    openShard: async (shard) => hold(await store.openShard!(shard)),
    closeShard: (shard) => store.closeShard!(shard),
  };
}

/**
 * An app pacing `topic` (`debounce: '1 hour'`: no window closes) on a memory store of `shards` owned by partition,
 * its appends held by `gate` and counted in `underWay` by shard.
 */
function heldApp(broker: MemoryBroker, topic: string, shards: number, gate: Gate, underWay: number[]): App {
  const store = held(memoryStore({ shards, ownership: 'partition' }), gate, underWay);
  return new App({ name: 'intake', logger: silentLogger, clock: new ManualClock(0), store }).withBroker(broker, (b) =>
    b.include(
      subscriber(topic, () => {
        throw new Error('no window closes');
      })
        .name(topic)
        .pace({ debounce: '1 hour' })
        .build(),
    ),
  );
}

describe('paced intake', () => {
  it('appends the deliveries of every partition at once, up to its limit a partition, and commits each once durable', async () => {
    const broker = new MemoryBroker({ topics: { ev: PARTITIONS } });
    for (let n = 0; n < PARTITIONS * PER_PARTITION; n++)
      await broker.publish('ev', { n }, { partition: n % PARTITIONS, key: `k${n % 30}` });
    const gate = new Gate();
    const underWay = Array.from({ length: PARTITIONS }, () => 0);
    const app = heldApp(broker, 'ev', PARTITIONS, gate, underWay);
    await app.start();
    const limit = Math.min(PACE_INTAKE_PER_PARTITION, Math.floor(PACE_INTAKE / PARTITIONS));
    while (underWay.some((n) => n < limit)) await turns(1);
    await turns(10); // and no more is taken while none is durable
    expect(underWay).toEqual(underWay.map(() => limit));
    expect(broker.committed('intake', 'ev')).toEqual([0, 0, 0]); // nothing is durable: nothing committed
    gate.open();
    await app.idle();
    expect(underWay).toEqual([0, 0, 0]);
    await app.stop();
    expect(broker.committed('intake', 'ev')).toEqual([PER_PARTITION, PER_PARTITION, PER_PARTITION]);
  });

  it('holds large deliveries to a budget of bytes under way, and takes the rest as they become durable', async () => {
    const SIZE = 1024 * 1024; // each delivery's value: JSON of 1 MiB
    const COUNT = Math.ceil((1.5 * PACE_INTAKE_BYTES) / SIZE);
    const broker = new MemoryBroker({ topics: { big: 1 } });
    const value = { pad: 'x'.repeat(SIZE - '{"pad":""}'.length) };
    for (let n = 0; n < COUNT; n++) await broker.publish('big', value, { partition: 0, key: `k${n % 7}` });
    const gate = new Gate();
    const underWay = [0];
    const app = heldApp(broker, 'big', 1, gate, underWay);
    await app.start();
    while (underWay[0]! * SIZE < PACE_INTAKE_BYTES) await turns(1);
    await turns(10); // and no more is taken while none is durable
    expect(underWay).toEqual([PACE_INTAKE_BYTES / SIZE]);
    expect(broker.committed('intake', 'big')).toEqual([0]);
    gate.open();
    await app.idle();
    await app.stop();
    expect(broker.committed('intake', 'big')).toEqual([COUNT]);
  });
});
