import type { Broker, ConsumeRequest, Consumer, InboundMessage } from '../../src/index.js';

/** Wraps a broker to count what its consumers hand to the app: how far the app has read. */
export class SpyBroker implements Broker {
  readonly kind: string;
  taken = 0;
  readonly takes: number[] = [];

  constructor(readonly inner: Broker) {
    this.kind = inner.kind;
  }

  connect(app?: Parameters<Broker['connect']>[0]): Promise<void> {
    return this.inner.connect(app);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  publish(topic: string, value: unknown, options?: Parameters<Broker['publish']>[2]): Promise<void> {
    return this.inner.publish(topic, value, options);
  }

  async consume(request: ConsumeRequest): Promise<Consumer> {
    const consumer = await this.inner.consume(request);
    const take = consumer.take.bind(consumer);
    consumer.take = (max: number, perPartition?: (partition: number) => number): readonly InboundMessage[] => {
      const got = take(max, perPartition);
      this.taken += got.length;
      if (got.length > 0) this.takes.push(got.length);
      return got;
    };
    return consumer;
  }
}
