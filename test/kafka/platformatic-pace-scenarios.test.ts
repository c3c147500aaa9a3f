/**
 * Pace across processes on the second Kafka client (see test/kafka/pace-scenario-cases.ts): each instance's
 * app reads through @platformatic/kafka and keeps its pace in platformaticKafkaStore. Some of the scenarios: an instance
 * killed comes back after the others took over (classic); `app.send` round robin while an instance joins and
 * one is killed (KIP-848, where the killed member's partitions move once its session ends on the broker); an
 * instance frozen past its session, under each protocol. The other scenarios run on kafkajs (docs/testing.md).
 */
import { describe, it } from 'vitest';
import { platformaticRuns } from './clients.js';
import { kafkaBrokers } from './fixture.js';
import { frozenIsFenced, killedComesBack, sendsRoundRobin } from './pace-scenario-cases.js';
import { scenarioAdmin } from './pace-scenario.js';

describe.skipIf(!kafkaBrokers || !platformaticRuns)(
  'pace on Kafka through @platformatic/kafka: instances as processes',
  { timeout: 150_000 },
  () => {
    const admin = scenarioAdmin();

    it('classic: an instance killed (SIGKILL) comes back on the same store after the others took over', () =>
      killedComesBack(admin(), 'batch', 'classic'));

    it('consumer protocol: app.send round robin while an instance joins and one is killed', () =>
      sendsRoundRobin(admin(), 'consumer'));

    it('consumer protocol: an instance frozen (SIGSTOP) past its session timeout is fenced, and thawed runs nothing twice', () =>
      frozenIsFenced(admin(), 'batch', 'consumer'));

    it('classic: an instance frozen (SIGSTOP) past its session timeout is fenced, and thawed runs nothing twice', () =>
      frozenIsFenced(admin(), 'debounce', 'classic'));
  },
);
