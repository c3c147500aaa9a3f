#!/usr/bin/env node
// Stop the broker started by start.mjs (same KAFKA_PORT / SLUICE_CACHE). Idempotent.
// SIGTERM to its process group (controlled shutdown), then SIGKILL after KAFKA_STOP_TIMEOUT_MS.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const VERSION = fs.readFileSync(path.join(HERE, 'pom.xml'), 'utf8').match(/<kafka\.version>([^<]+)</)[1];
const PORT = Number(process.env.KAFKA_PORT || 9092);
const CACHE = path.join(process.env.SLUICE_CACHE || path.join(os.homedir(), '.cache', 'sluice'), `kafka-${VERSION}`);
const PIDFILE = path.join(CACHE, `broker-${PORT}`, 'kafka.pid');
const TIMEOUT_MS = Number(process.env.KAFKA_STOP_TIMEOUT_MS || 30_000);

const say = (msg) => process.stderr.write(`[kafka] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const alive = (pid) => {
  // a zombie (exited, not yet reaped) counts as dead
  try {
    process.kill(pid, 0);
  } catch (e) {
    if (e.code !== 'EPERM') return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
};
// Only signal the pid if it still is our broker (guards against pid reuse).
const isBroker = (pid) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('kafka.Kafka');
  } catch {
    return alive(pid);
  }
};
const signal = (pid, sig) => {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {}
  }
};

const pid = Number(fs.existsSync(PIDFILE) && fs.readFileSync(PIDFILE, 'utf8').trim()) || 0;
if (!pid || !alive(pid) || !isBroker(pid)) {
  say(`no broker running for port ${PORT}`);
  fs.rmSync(PIDFILE, { force: true });
  process.exit(0);
}
const t0 = Date.now();
signal(pid, 'SIGTERM');
while (alive(pid) && Date.now() - t0 < TIMEOUT_MS) await sleep(200);
if (alive(pid)) {
  say(`broker pid ${pid} still alive after ${TIMEOUT_MS / 1000} s; SIGKILL`);
  signal(pid, 'SIGKILL');
  while (alive(pid)) await sleep(100);
}
fs.rmSync(PIDFILE, { force: true });
say(`broker pid ${pid} stopped in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
