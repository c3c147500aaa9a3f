/**
 * A real Prometheus server, for test/telemetry/prometheus-scrape.test.ts and scripts/observability/picture.ts: the binary
 * found (or fetched) by scripts/prometheus/fetch.mjs, run as a child process with a generated config on a free
 * loopback port and a temporary data directory.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The binary's path, or why there is none. With `ui`, its web UI's assets too: `web`, the directory to serve
 * them from (undefined: the binary's own default).
 */
export function findPrometheus(opts: { ui?: boolean } = {}): { binary: string; web?: string } | { reason: string } {
  const args = ['scripts/prometheus/fetch.mjs', ...(opts.ui ? ['--ui'] : [])];
  const found = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 300_000 });
  const binary = /PROMETHEUS=(\S+)/.exec(found.stdout ?? '')?.[1];
  const web = /PROMETHEUS_WEB=(\S+)/.exec(found.stdout ?? '')?.[1];
  if (found.status === 0 && binary) return web ? { binary, web } : { binary };
  const why = (found.stderr ?? '').trim().split('\n').slice(-2).join(' | ') || found.error?.message;
  return { reason: `no Prometheus: scripts/prometheus/fetch.mjs failed (${why})` };
}

/** A loopback port nobody listens on (as the system gives one). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** One Prometheus server scraping `target` (host:port) every `intervalMs`. */
export class PrometheusServer {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly url: string,
  ) {}

  /** `web`: the directory of the web UI's assets (findPrometheus with `ui`); without it, the binary's default. */
  static async start(binary: string, target: string, intervalMs = 250, web?: string): Promise<PrometheusServer> {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-prometheus-'));
    const config = path.join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global:',
        `  scrape_interval: ${intervalMs}ms`,
        `  scrape_timeout: ${intervalMs}ms`,
        'scrape_configs:',
        '  - job_name: sluice',
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const args = [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      ...(web ? [`--web.local-assets=${web}/`] : []),
    ];
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const server = new PrometheusServer(child, dir, `http://127.0.0.1:${port}`);
    await server.until(async () => (await fetch(`${server.url}/-/ready`)).ok, 'Prometheus to be ready');
    return server;
  }

  /** The result of an instant query: each series' labels and value. */
  async query(promql: string): Promise<{ metric: Record<string, string>; value: number }[]> {
    const res = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await res.json()) as {
      status: string;
      data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== 'success') throw new Error(`query ${promql}: ${JSON.stringify(body)}`);
    return body.data!.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** Polls `holds` (errors count as not yet) until it is true, for at most `boundMs`. */
  async until(holds: () => Promise<boolean>, what: string, boundMs = 30_000): Promise<void> {
    const deadline = Date.now() + boundMs;
    for (;;) {
      if (this.child.exitCode !== null)
        throw new Error(`Prometheus exited (${this.child.exitCode}) waiting for ${what}`);
      if (await holds().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`waited ${boundMs} ms for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50)); // the poll's pace, not a wait for an outcome
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
