/**
 * Pace under SIGKILL: a child (test/fixtures/pace-child.mjs) runs an app with a debounced and a batched
 * subscriber on a file store and the system clock, sends events with and without IDs, and is killed at
 * random moments (after some acknowledgements, or just after a run started), again and again on the same
 * directory; each new life first retries starts of earlier lives. A last life sends nothing new and waits
 * until every acknowledged run has finished (told which runs earlier lives acknowledged and saw finish).
 * Then, across all lives: every acknowledged event is in exactly one run's input, every acknowledged window ran under the run ID its receipt named, no run was empty, and
 * a retried event ID got its first receipt again — keys with lone surrogates and event IDs named like
 * Object.prototype properties (`constructor`, `__proto__`) included.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { seeded } from '../helpers.js';
import { crashRounds, soakTimeout } from '../soak.js';

const ITERATIONS = crashRounds(1 / 4);
const CHILD = 'test/fixtures/pace-child.mjs';
/**
 * Shards of the child's store. More than two: a restart must replay every shard before a run leaves, and
 * journal each run's end in its key's shard — with one or two shards, a pace stage that opened its shards
 * one at a time and routed by the shards opened so far still routed every record right.
 */
const SHARDS = 4;

type Sub = 'deb' | 'bat';
/** A start as the child printed it before sending: `[sub, key, eventNo, eventId]`, what a retry sends again. */
type Start = [sub: Sub, key: string, eventNo: string, eventId: string | undefined];

interface Ack {
  readonly sub: Sub;
  readonly key: string;
  readonly eventNo: string;
  readonly eventId: string | undefined;
  readonly runId: string;
  readonly duplicate: boolean;
}

interface Run {
  readonly sub: Sub;
  readonly runId: string;
  readonly key: string;
  readonly size: number;
  readonly events: readonly string[];
  /** The life it ran in. */
  readonly life: number;
}

interface Life {
  readonly sends: Start[];
  readonly acks: Ack[];
  readonly runs: Run[];
  /** The runs whose handler returned successfully (it printed `finished` just before), as `[sub, runId]`. */
  readonly finished: [sub: Sub, runId: string][];
  /** The child printed `drained`: every acknowledged run finished. */
  drained: boolean;
}

/** When to kill a life: after this many acknowledgements, or just after this many run lines (and at most `acks`). */
interface KillAt {
  readonly acks: number;
  readonly runs?: number;
}

/**
 * Runs one life of the child and parses every line it printed. With `kill`, SIGKILLs it at that point and
 * resolves once it is gone; without, expects it to drain and exit 0. Rejects if it ends otherwise.
 */
function life(n: number, args: readonly string[], kill: KillAt | undefined): Promise<Life> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const result: Life = { sends: [], acks: [], runs: [], finished: [], drained: false };
    let buffer = '';
    let stderr = '';
    const parse = (line: string): void => {
      const [word, ...f] = line.split(' ');
      // Keys, event IDs and run IDs come as JSON strings (they may hold lone surrogates); `-` is no event ID.
      const str = (s: string): string => JSON.parse(s) as string;
      const id = (s: string): string | undefined => (s === '-' ? undefined : str(s));
      if (word === 'send') result.sends.push([f[0] as Sub, str(f[1]!), f[2]!, id(f[3]!)]);
      else if (word === 'ack')
        result.acks.push({
          sub: f[0] as Sub,
          key: str(f[1]!),
          eventNo: f[2]!,
          eventId: id(f[3]!),
          runId: str(f[4]!),
          duplicate: f[5] === 'true',
        });
      else if (word === 'run')
        result.runs.push({
          sub: f[0] as Sub,
          runId: str(f[1]!),
          key: str(f[2]!),
          size: Number(f[3]),
          events: f.slice(5),
          life: n,
        });
      else if (word === 'finished') result.finished.push([f[0] as Sub, str(f[1]!)]);
      else if (word === 'drained') result.drained = true;
    };
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!; // a line cut by the kill is not counted
      try {
        for (const line of lines) parse(line);
      } catch (error) {
        child.kill('SIGKILL');
        return reject(new Error(`child printed a line that does not read: ${String(error)}`));
      }
      if (
        kill &&
        !child.killed &&
        (result.acks.length >= kill.acks || (kill.runs !== undefined && result.runs.length >= kill.runs))
      )
        child.kill('SIGKILL');
    });
    child.on('close', (code, signal) => {
      if (kill ? signal === 'SIGKILL' : code === 0 && result.drained) resolve(result);
      else reject(new Error(`child ended with ${signal ?? `code ${code}`}: ${stderr}`));
    });
  });
}

/** Groups values by a key made from each. */
function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}

describe('pace under SIGKILL', () => {
  it(
    `puts every acknowledged event in exactly one run, under its receipt's run ID, across ${ITERATIONS} kills`,
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-pace-crash-'));
      const store = path.join(dir, 'store');
      const retriesFile = path.join(dir, 'retries.json');
      const runsFile = path.join(dir, 'runs.json');
      const random = seeded(Number(process.env.SLUICE_CRASH_SEED ?? 4));
      const sends: Start[] = [];
      const acks: Ack[] = [];
      const runs: Run[] = [];
      /** Every run seen to finish, in any life, by `sub/runId`: the last life does not wait for these. */
      const finished = new Map<string, [sub: Sub, runId: string]>();
      /** Starts with an ID never acknowledged: their client retries them in the next life until one is. */
      const unanswered = new Map<string, Start>();
      let runKills = 0;

      for (let i = 0; i <= ITERATIONS; i++) {
        const last = i === ITERATIONS;
        // Retries: every unanswered start with an ID, and a few that were acknowledged (their ack was lost to the client).
        const answered = acks.filter((a) => a.eventId !== undefined && !a.duplicate);
        const again = Array.from(
          { length: Math.min(answered.length, Math.floor(random() * 6)) },
          () => answered[Math.floor(random() * answered.length)]!,
        );
        const retries: Start[] = [
          ...unanswered.values(),
          ...again.map((a): Start => [a.sub, a.key, a.eventNo, a.eventId]),
        ];
        writeFileSync(retriesFile, JSON.stringify(retries));
        // What the runs of earlier lives came to: the last life waits for the acknowledged ones not seen to finish.
        const acked = new Map(acks.map((a) => [`${a.sub}/${a.runId}`, [a.sub, a.runId]]));
        writeFileSync(runsFile, JSON.stringify({ acked: [...acked.values()], finished: [...finished.values()] }));
        const kill: KillAt | undefined = last
          ? undefined
          : random() < 0.3
            ? { acks: 400, runs: 1 + Math.floor(random() * 30) }
            : { acks: 1 + Math.floor(random() * 150) };
        const l = await life(
          i,
          [
            store,
            String(i),
            String(Math.floor(random() * 2 ** 31)),
            retriesFile,
            runsFile,
            last ? 'drain' : 'send',
            String(SHARDS),
          ],
          kill,
        );
        if (kill?.runs !== undefined && l.runs.length >= kill.runs && l.acks.length < kill.acks) runKills++;
        sends.push(...l.sends);
        acks.push(...l.acks);
        runs.push(...l.runs);
        for (const [sub, runId] of l.finished) finished.set(`${sub}/${runId}`, [sub, runId]);
        for (const [sub, key, eventNo, eventId] of l.sends)
          if (eventId !== undefined) unanswered.set(`${sub}/${key}/${eventId}`, [sub, key, eventNo, eventId]);
        for (const a of l.acks) unanswered.delete(`${a.sub}/${a.key}/${a.eventId}`);
      }
      expect(unanswered.size).toBe(0); // the last life answered every retry

      // What was sent: each event number names one start, of one subscriber and key (a retry sends the same again).
      const sent = new Map<string, Start>();
      for (const s of sends) {
        const first = sent.get(s[2]);
        if (first) expect(s).toEqual(first);
        else sent.set(s[2], s);
      }

      // Runs: never empty, under `<key>@<uuid>`, carrying starts of their own subscriber and key; every
      // invocation of one run ID (a retry, or a run handed out again after a restart) carries the same input.
      const runsById = groupBy(runs, (r) => `${r.sub}/${r.runId}`);
      for (const [, same] of runsById) {
        const r = same[0]!;
        expect(r.size).toBeGreaterThanOrEqual(1);
        expect(r.events.length).toBeGreaterThanOrEqual(1);
        expect(r.runId.slice(0, r.key.length + 1)).toBe(`${r.key}@`);
        expect(r.runId.slice(r.key.length + 1)).toMatch(
          /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
        );
        for (const e of r.events) expect(sent.get(e)?.slice(0, 2)).toEqual([r.sub, r.key]);
        if (r.sub === 'bat') expect(r.events.length).toBe(r.size);
        else expect(r.events.length).toBe(1); // a debounced run gets the latest start's event
        for (const other of same)
          expect({ size: other.size, events: other.events }).toEqual({ size: r.size, events: r.events });
      }
      // No event is in two runs (nor twice in one).
      const runOf = new Map<string, string>();
      for (const [id, same] of runsById) {
        for (const e of same[0]!.events) {
          expect(runOf.get(e), `event ${e} in ${id} and ${runOf.get(e)}`).toBeUndefined();
          runOf.set(e, id);
        }
      }

      // Receipts: every acknowledged window ran, under the run ID its receipt named; a batch run holds the event,
      // a debounced run holding it is that one; a repeated event ID got the first receipt again, as a duplicate.
      for (const a of acks) {
        const id = `${a.sub}/${a.runId}`;
        expect(runsById.has(id), `${id} (receipt of ${a.eventNo}) never ran`).toBe(true);
        if (a.sub === 'bat') expect(runOf.get(a.eventNo)).toBe(id);
        else if (runOf.has(a.eventNo)) expect(runOf.get(a.eventNo)).toBe(id);
      }
      for (const [, same] of groupBy(
        acks.filter((a) => a.eventId !== undefined),
        (a) => `${a.sub}/${a.key}/${a.eventId}`,
      )) {
        expect(same.map((a) => a.runId)).toEqual(same.map(() => same[0]!.runId));
        expect(same.slice(1).map((a) => a.duplicate)).toEqual(same.slice(1).map(() => true));
      }
      for (const [eventNo, same] of groupBy(acks, (a) => a.eventNo))
        expect(same.filter((a) => !a.duplicate).length, eventNo).toBeLessThanOrEqual(1);

      // A debounced run counts the starts it collapsed: at least those whose receipt named it, and across a key's
      // runs no more than the distinct events sent to it (each counted once, whatever was retried).
      const acked = groupBy([...new Map(acks.map((a) => [a.eventNo, a])).values()], (a) => `${a.sub}/${a.runId}`);
      for (const [id, same] of runsById) expect(same[0]!.size).toBeGreaterThanOrEqual(acked.get(id)?.length ?? 0);
      const sentPerKey = groupBy([...sent.values()], ([sub, key]) => `${sub}/${key}`);
      for (const [key, keyRuns] of groupBy(
        [...runsById.values()].map((same) => same[0]!),
        (r) => `${r.sub}/${r.key}`,
      )) {
        expect(keyRuns.reduce((sum, r) => sum + r.size, 0)).toBeLessThanOrEqual(sentPerKey.get(key)?.length ?? 0);
      }

      // The run covered what it is meant to: kills after runs, retries that were duplicates, re-runs after restarts.
      expect(runKills).toBeGreaterThan(0);
      expect(acks.some((a) => a.duplicate)).toBe(true);
      expect([...runsById.values()].some((same) => new Set(same.map((r) => r.life)).size > 1)).toBe(true);
      // Keys with lone surrogates, and event IDs named like Object.prototype properties, acknowledged and run.
      expect(new Set(runs.map((r) => r.key.charCodeAt(0))).has(0xd800)).toBe(true);
      expect(new Set(runs.map((r) => r.key.charCodeAt(0))).has(0xdc00)).toBe(true);
      const protoAcks = acks.filter((a) => a.key.startsWith('p') && !a.eventId!.startsWith('id-'));
      expect(new Set(protoAcks.map((a) => a.eventId))).toEqual(
        new Set(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']),
      );
      expect(protoAcks.some((a) => !a.duplicate) && protoAcks.some((a) => a.duplicate)).toBe(true); // a retried one got its first receipt again
    },
    soakTimeout(600_000),
  );
});
