/**
 * The Kafka clients a suite runs on: kafkajs (`sluice/kafka`) always, and @platformatic/kafka
 * (`sluice/kafka/platformatic`) under both group protocols where Node runs it (22.22 / 24.6 and later).
 */
import type { PlatformaticKafkaBrokerOptions } from '../../src/brokers/platformatic/index.js';
import type { PlatformaticKafkaBroker } from '../../src/brokers/platformatic/index.js';
import { nodeRuns } from '../../src/brokers/platformatic/platformatic.js';
import type { App, Broker } from '../../src/index.js';
import { jsonLogger } from '../../src/index.js';
import { kafkaBrokers, testKafka } from './fixture.js';

/** Whether @platformatic/kafka runs on this Node; its suites are skipped where it does not (see docs/testing.md). */
export const platformaticRuns = nodeRuns(process.versions.node);
const { PlatformaticKafkaBroker: Platformatic } = platformaticRuns
  ? await import('../../src/brokers/platformatic/index.js')
  : { PlatformaticKafkaBroker: undefined };

/** The consumer timings of every test client: quick fetches and heartbeats. */
export const TEST_CONSUMER = {
  maxWaitTimeMs: 100,
  heartbeatIntervalMs: 300,
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 15_000,
  commitIntervalMs: 200,
};

const made: PlatformaticKafkaBroker[] = [];

/** An @platformatic/kafka client tuned for tests, as `testKafka` is; only its errors are logged. */
export function testPlatformatic(
  groupProtocol: 'classic' | 'consumer',
  extra: Partial<PlatformaticKafkaBrokerOptions> = {},
): PlatformaticKafkaBroker {
  const broker = new Platformatic!({
    logger: jsonLogger({ level: 'error' }),
    ...extra,
    brokers: [kafkaBrokers!],
    clientId: 'sluice-test',
    groupProtocol,
    consumer: { ...TEST_CONSUMER, ...extra.consumer },
  });
  made.push(broker);
  return broker;
}

/** Closes every @platformatic/kafka client the tests made. */
export async function closePlatformatic(): Promise<void> {
  await Promise.all(made.splice(0).map((b) => b.close()));
}

/** A broker a test makes: the port, and a topic made at will. */
export type TestBroker = Broker & { createTopic(name: string, partitions: number): Promise<void> };

/** A client a suite runs on: its name in test titles, and how to make a broker on it. */
export interface TestClient {
  /** `kafkajs`, `platformatic classic`, `platformatic consumer`. */
  readonly name: string;
  /** The argument a child process fixture takes to make the same client: `kafkajs`, `classic`, `consumer`. */
  readonly arg: 'kafkajs' | 'classic' | 'consumer';
  /** The Kafka store on the same client: `kafkaStore` or `platformaticKafkaStore` (see `testKafkaStore`). */
  readonly store: 'kafkajs' | 'platformatic';
  broker(extra?: { readonly createTopics?: { readonly partitions: number } }): TestBroker;
}

/** kafkajs: `sluice/kafka`, on every Node line. */
export const kafkajsClient: TestClient = {
  name: 'kafkajs',
  arg: 'kafkajs',
  store: 'kafkajs',
  broker: (extra) => testKafka(extra),
};

/** @platformatic/kafka under each group protocol; a suite on them is skipped where `platformaticRuns` is false. */
export const platformaticClients: readonly TestClient[] = (['classic', 'consumer'] as const).map((protocol) => ({
  name: `platformatic ${protocol}`,
  arg: protocol,
  store: 'platformatic',
  broker: (extra?: { readonly createTopics?: { readonly partitions: number } }) => testPlatformatic(protocol, extra),
}));

/**
 * The client the multi-process pace scenarios run on where a scenario names none: the Node lines share the
 * clients out, each running the scenarios once (a scenario takes a minute), kafkajs on Node 20 and wherever
 * @platformatic/kafka does not run, its classic protocol on Node 22, KIP-848 on Node 24 and later.
 * `SLUICE_SCENARIO_CLIENT` (`kafkajs`, `classic`, `consumer`) picks one.
 */
export const scenarioClient: TestClient['arg'] = ((): TestClient['arg'] => {
  const named = process.env.SLUICE_SCENARIO_CLIENT;
  if (named === 'kafkajs' || named === 'classic' || named === 'consumer') return named;
  if (named !== undefined) throw new Error(`SLUICE_SCENARIO_CLIENT: kafkajs, classic or consumer, got ${named}`);
  if (!platformaticRuns) return 'kafkajs';
  return Number(process.versions.node.split('.')[0]) === 22 ? 'classic' : 'consumer';
})();

/** Every client that runs here: kafkajs, then @platformatic/kafka's two group protocols where Node runs it. */
export const kafkaClients: readonly TestClient[] = [kafkajsClient, ...(platformaticRuns ? platformaticClients : [])];

/**
 * Waits until the instances' first subscribers own each of `partitions` partitions once between them, then
 * until each is idle. Under KIP-848 a member's `start()` resolves once it has some partitions, while the
 * others still hand theirs over, heartbeat by heartbeat: a test on a `ManualClock` waits for that before it
 * moves the clock, since a window restored past its close fires at the clock's next move. Polls the apps'
 * health: a state only the group knows, waited for no set time.
 */
export async function groupSettled(apps: readonly App[], partitions: number): Promise<void> {
  for (;;) {
    const owned = (await Promise.all(apps.map((a) => a.health()))).flatMap(
      (h) => h.subscribers[0]?.assignedPartitions ?? [],
    );
    if (owned.length === partitions && new Set(owned).size === partitions) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await Promise.all(apps.map((a) => a.idle()));
}
