// Shared by the Node drivers (kafkajs, NestJS, Sluice): the run's spec, the handler's bookkeeping and the
// JSON result line. The Python and Java drivers do the same in their own file; keep the four in step.
//
// Spec (env PEER_SPEC, JSON): { brokers, topic, group, n, tail, keys, partitions, sleepMs, concurrency, ordered,
// mode, stopAt, idleMs, firstWaitMs }. IDs below n are the backlog (in the topic before the driver starts);
// IDs from n to n + tail are the live tail, sent at a slow fixed rate once the backlog is handled.
//  mode 'measure': stop gracefully once n + tail messages were handled; print {"backlog":true} once the
//                  n backlog messages were.
//  mode 'stopAt':  stop gracefully once stopAt messages were handled (first half of a restart).
//  mode 'drain':   stop gracefully once nothing was handled for idleMs (second half of a restart).
// Messages: key `k<id mod keys>`, value {"id", "seq" (per key, from 0), "ts" (producer's Date.now())}.
// Result (last stdout line): handled, distinct, rate (backlog messages/s, first to last backlog message
// handled), p50/p99 latency of the tail (ms, producer's timestamp to handler start), peak RSS (VmHWM, KiB),
// per-key order violations, and the IDs when mode is not 'measure'.
import fs from 'node:fs';

export const spec = JSON.parse(process.env.PEER_SPEC);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function peakRssKb() {
  const m = /VmHWM:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : 0;
}

export function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null;
}

/** The bookkeeping every driver does per message; `done` resolves when the mode's stop condition holds. */
export function tracker() {
  const lastSeq = new Map();
  const total = spec.n + (spec.tail ?? 0);
  const seen = new Uint8Array(total);
  const ids = [];
  const lat = [];
  let handled = 0,
    distinct = 0,
    violations = 0,
    backlog = 0,
    first = 0,
    last = 0,
    timer = null;
  let resolve;
  const done = new Promise((r) => (resolve = r));
  const keepIds = spec.mode !== 'measure';
  const idle = () => {
    clearTimeout(timer);
    timer = setTimeout(resolve, spec.idleMs);
  };
  if (spec.mode === 'drain') timer = setTimeout(resolve, spec.firstWaitMs ?? 60_000);
  return {
    done,
    /** Call at the start of handling, with the message's value: bytes to decode, or the framework's decoded object. */
    begin(raw) {
      const now = Date.now();
      const v = Buffer.isBuffer(raw) ? JSON.parse(raw.toString('utf8')) : raw;
      if (v.id >= spec.n) lat.push(now - v.ts);
      const key = `k${v.id % spec.keys}`;
      const prev = lastSeq.get(key);
      if (prev !== undefined && v.seq <= prev) violations++;
      lastSeq.set(key, v.seq);
      return v;
    },
    /** Call once the handler's work is done. */
    end(v) {
      handled++;
      if (!seen[v.id]) {
        seen[v.id] = 1;
        distinct++;
      }
      if (v.id < spec.n) {
        const now = performance.now();
        if (backlog === 0) first = now;
        last = now;
        if (++backlog === spec.n && spec.mode === 'measure') process.stdout.write('{"backlog":true}\n');
      }
      if (keepIds) ids.push(v.id);
      if (spec.mode === 'measure' && handled === total) resolve();
      else if (spec.mode === 'stopAt' && handled === spec.stopAt) resolve();
      else if (spec.mode === 'drain') idle();
    },
    result(extra = {}) {
      clearTimeout(timer);
      lat.sort((a, b) => a - b);
      return {
        handled,
        distinct,
        violations,
        rate: backlog > 1 ? (backlog - 1) / ((last - first) / 1000) : 0,
        p50Ms: percentile(lat, 50),
        p99Ms: percentile(lat, 99),
        peakRssKb: peakRssKb(),
        ...(keepIds ? { ids } : {}),
        ...extra,
      };
    },
  };
}

/** Writes the result line; resolves once it is flushed (a pipe write is asynchronous: exiting earlier cuts it). */
export function report(result) {
  return new Promise((resolve) => process.stdout.write(`${JSON.stringify(result)}\n`, resolve));
}

export const ready = () => process.stdout.write('{"ready":true}\n');
