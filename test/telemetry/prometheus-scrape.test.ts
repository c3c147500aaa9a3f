/**
 * A real Prometheus server scrapes an app's /metrics while it runs a known workload on the memory broker.
 * Under CI=true it must run (a Prometheus that cannot be fetched fails it); elsewhere it is skipped, with the
 * reason, when scripts/prometheus/fetch.mjs cannot find or fetch one.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App, HandlerOutcome, MemoryBroker, subscriber } from '../../src/index.js';
import { silentLogger } from '../../src/testing.js';
import { findPrometheus, PrometheusServer } from '../../scripts/prometheus/server.js';

const found = findPrometheus();
if ('reason' in found && process.env.CI === 'true')
  throw new Error(`${found.reason}. Under CI the Prometheus test must run.`);
const skip = 'reason' in found ? found.reason : false;
if (skip) console.warn(`skipped: ${skip}`);

describe.skipIf(skip !== false)('a real Prometheus scraping an app', () => {
  const N = 50;
  const broker = new MemoryBroker({ partitions: 2 });
  const failedOnce = new Set<number>();
  const handler = async (v: { n: number }): Promise<HandlerOutcome | void> => {
    if (v.n === 7) return HandlerOutcome.reject('seven is refused');
    if (v.n % 10 === 0 && !failedOnce.has(v.n)) {
      failedOnce.add(v.n);
      throw new Error('fails once');
    }
  };
  const sub = subscriber('scrape-orders', handler)
    .name('orders')
    .workers(4)
    .retry({ attempts: 3, backoff: { initialMs: 1, maxMs: 1 } });
  const app = new App({ name: 'scraped', logger: silentLogger, metrics: true, http: { port: 0, host: '127.0.0.1' } });
  app.withBroker(broker, (b) => b.include(sub.build()));
  let prometheus: PrometheusServer;

  beforeAll(async () => {
    await app.start();
    prometheus = await PrometheusServer.start((found as { binary: string }).binary, `127.0.0.1:${app.httpPort()}`);
  }, 60_000);

  afterAll(async () => {
    await prometheus?.stop();
    await app.stop();
  });

  it('sees the handled counts, the dead letter and the gauges of a finished workload', async () => {
    for (let n = 0; n < N; n++) await broker.publish('scrape-orders', { n });
    await app.idle();
    const finishedAt = Date.now() / 1000;
    // A scrape taken after the workload finished is in once the sample's own timestamp is past that moment.
    await prometheus.until(async () => {
      const [sample] = await prometheus.query('timestamp(sluice_handled_total{outcome="ack"})');
      return sample !== undefined && sample.value > finishedAt;
    }, 'a scrape after the workload');
    const value = async (promql: string) => (await prometheus.query(promql)).map((r) => r.value);
    expect(await value('up{job="sluice"}')).toEqual([1]);
    expect(await value('sluice_handled_total{subscriber="orders",outcome="ack"}')).toEqual([N - 1]);
    expect(await value('sluice_handled_total{subscriber="orders",outcome="retry"}')).toEqual([5]);
    expect(await value('sluice_handled_total{subscriber="orders",outcome="reject"}')).toEqual([1]);
    expect(await value('sluice_handled_total{subscriber="orders",outcome="dead_letter"}')).toEqual([0]);
    expect(await value('sluice_dead_letters_total{subscriber="orders",result="published"}')).toEqual([1]);
    expect(await value('sluice_handler_duration_seconds_count{subscriber="orders"}')).toEqual([N + 5]);
    expect(await value('sum(sluice_consumer_lag{subscriber="orders"})')).toEqual([0]);
    expect(await value('sluice_in_flight{subscriber="orders"}')).toEqual([0]);
    const partitions = await prometheus.query('sluice_uncommitted{subscriber="orders"}');
    expect(partitions.map((r) => r.metric.partition).sort()).toEqual(['0', '1']);
  }, 60_000);

  it("evaluates every query of the Grafana dashboard in docs/ (each returns data on this app's metrics)", async () => {
    const dashboard = JSON.parse(readFileSync('docs/grafana-dashboard.json', 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    // A rate needs two samples in its range: wait for a few scrapes (Prometheus's first comes seconds after its start).
    await prometheus.until(async () => {
      const [samples] = await prometheus.query('count_over_time(sluice_handled_total{outcome="ack"}[1m])');
      return samples !== undefined && samples.value >= 3;
    }, 'three scrapes');
    const paceOrStore = /sluice_(pace|store)_/; // this app has no pace stage: those queries only need to parse
    for (const panel of dashboard.panels)
      for (const { expr } of panel.targets) {
        const promql = expr.replaceAll('$__rate_interval', '1m').replaceAll('$subscriber', '.*');
        const result = await prometheus.query(promql); // rejects on a query Prometheus cannot read
        if (!paceOrStore.test(expr)) expect([panel.title, expr, result.length > 0]).toEqual([panel.title, expr, true]);
      }
  });
});
