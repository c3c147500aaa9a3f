import { SluiceError, show } from '../core/errors.js';
import type { Broker } from '../core/ports.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import type { Pacer } from '../pace-stage/pacer.js';

/**
 * An `exactlyOnce` paced subscriber's publishes go out with its runs' `done` records, in the store's commit:
 * the store must publish (see `Store.publishes`), or the subscriber is refused.
 */
export function checkPublishingStore(sub: CompiledSubscriber, pacer: Pacer): void {
  if (!pacer.publishes)
    throw new SluiceError(
      'CONFIG_INVALID',
      `subscriber ${show(sub.name)}: exactlyOnce with pace needs a store that publishes a run's messages with its done record (kafkaStore); the app's store does not`,
    );
}

/** ... and on the cluster the subscriber reads, where its consumers read what it published. */
export async function checkPublishingCluster(sub: CompiledSubscriber, broker: Broker, pacer: Pacer): Promise<void> {
  const [brokers, stores] = await Promise.all([broker.clusterId?.(), pacer.clusterId()]);
  if (brokers === undefined || stores === undefined || brokers === stores) return;
  throw new SluiceError(
    'CONFIG_INVALID',
    `subscriber ${show(sub.name)}: exactlyOnce with pace publishes through the store, on Kafka cluster ${show(stores)}, and the subscriber reads cluster ${show(brokers)}; give the store the brokers of the subscriber's cluster`,
  );
}
