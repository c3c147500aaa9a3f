/**
 * Pace across processes on the real broker: up to three instances of one app (one consumer group) as child
 * processes (test/fixtures/pace-instance.mjs), each with its own KafkaBroker and Kafka store (one prefix,
 * shards owned by partition) on a topic of 6 partitions, while the test publishes a stream of numbered
 * events over 60 keys. Instances join, leave, are killed, come back, and freeze past their session timeout;
 * then the stream stops, every instance drains, and the runs they printed are checked: every event in
 * exactly one finished run (a run runs again only under its ID), no two instances running a key at once,
 * a frozen instance fenced and running nothing its partitions' new owner runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaBroker } from '../../src/brokers/kafka/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

const SCRIPT = fileURLToPath(new URL('../fixtures/pace-instance.mjs', import.meta.url));
const PARTITIONS = 6;
const KEYS = 60;
/** The children's session timeout: the least the broker takes by default, so that a death is noticed soon. */
const SESSION_MS = 6_000;
/** The longest any one wait of a scenario may take: a bound, not a synchronisation. */
const WAIT_MS = 45_000;

type Mode = 'batch' | 'debounce';

/** A line a child printed (see test/fixtures/pace-instance.mjs). */
interface Line {
  readonly ev: 'ready' | 'own' | 'release' | 'start' | 'end' | 'fail' | 'stopped';
  readonly i: string;
  readonly pid: number;
  readonly shard?: number;
  readonly run?: string;
  readonly key?: string;
  readonly seqs?: number[];
  readonly size?: number;
  readonly attempt?: number;
  /** Monotonic microseconds (process.hrtime), comparable across the processes of this machine. */
  readonly t?: number;
}

type RunLine = Line & Required<Pick<Line, 'run' | 'key' | 'seqs' | 'size' | 'attempt' | 't'>>;

const micros = (): number => Number(process.hrtime.bigint() / 1000n);
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything the children of one scenario printed, in the order it arrived; and a way to wait on it. */
class Output {
  readonly lines: Line[] = [];
  private wake: () => void = () => {};
  private next = new Promise<void>((resolve) => (this.wake = resolve));

  push(line: Line): void {
    this.lines.push(line);
    this.wake();
    this.next = new Promise<void>((resolve) => (this.wake = resolve));
  }

  /** Resolves at the next line, or after `ms` (for conditions on the broker's state). */
  lineOr(ms: number): Promise<void> {
    return Promise.race([this.next, pause(ms)]);
  }
}

/** A child process: one instance of the app. */
class Instance {
  readonly child: ChildProcess;
  readonly lines: Line[] = [];
  /** When it exited (micros), for the runs it was in when killed. */
  exitedAt: number | undefined;
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly id: string,
    args: readonly string[],
    output: Output,
  ) {
    this.child = spawn(process.execPath, [SCRIPT, ...args, id, String(SESSION_MS)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let buffer = '';
    this.child.stdout!.on('data', (d: Buffer) => {
      buffer += d.toString();
      const parts = buffer.split('\n');
      buffer = parts.pop()!;
      for (const part of parts) {
        const line = JSON.parse(part) as Line;
        this.lines.push(line);
        output.push(line);
      }
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        this.exitedAt = micros();
        resolve({ code, signal });
        output.push({ ev: 'stopped', i: id, pid: -1 }); // wakes the waits; not one of the child's lines
      }),
    );
  }

  get alive(): boolean {
    return this.exitedAt === undefined;
  }

  has(ev: Line['ev']): boolean {
    return this.lines.some((l) => l.ev === ev);
  }

  /** The shards it holds now, by its own/release lines. */
  owned(): Set<number> {
    const shards = new Set<number>();
    for (const l of this.lines) {
      if (l.ev === 'own') shards.add(l.shard!);
      if (l.ev === 'release') shards.delete(l.shard!);
    }
    return shards;
  }
}

/** The test's stream of events: for each key, events numbered 0, 1, 2… in the order they are published. */
class Stream {
  readonly next = new Array<number>(KEYS).fill(0);
  produced = 0;
  private running = true;
  private readonly done: Promise<void>;

  constructor(broker: KafkaBroker, topic: string) {
    this.done = (async () => {
      while (this.running) {
        const keys = new Set<number>();
        while (keys.size < 3) keys.add(Math.floor(Math.random() * KEYS));
        // One publish per key at a time: a key's events reach its partition in order.
        await Promise.all(
          [...keys].map((k) => broker.publish(topic, { key: `k${k}`, seq: this.next[k]!++ }, { key: `k${k}` })),
        );
        this.produced += keys.size;
        await pause(20); // the stream's pace, not a wait for anything
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

describe.skipIf(!kafkaBrokers)('pace on Kafka: instances as processes', { timeout: 150_000 }, () => {
  let admin: Admin;
  let instances: Instance[] = [];
  beforeAll(async () => {
    admin = new Kafka({ clientId: 'scenarios', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
  });
  afterEach(async () => {
    for (const instance of instances) if (instance.alive) instance.child.kill('SIGKILL');
    await Promise.all(instances.map((i) => i.exited));
    instances = [];
  });
  afterAll(async () => {
    await admin.disconnect();
    await closeAll();
  });

  /** One scenario's app, topic, stream and instances. */
  async function scenario(mode: Mode) {
    const topic = uniqueTopic(`scen-${mode}`);
    const name = `scen-${uniquePrefix(mode)}`;
    const prefix = uniquePrefix('scen');
    const broker = testKafka();
    await broker.createTopic(topic, PARTITIONS);
    const output = new Output();
    const stream = new Stream(broker, topic);
    /** Marks of the scenario's events (micros): SIGSTOP and SIGCONT of a frozen instance. */
    const frozen: { id: string; stoppedAt: number; continuedAt: number }[] = [];

    /** Waits (bounded) until `cond` holds, looking again at each line and at least every 100 ms. */
    async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
      const deadline = Date.now() + WAIT_MS;
      while (!(await cond())) {
        if (Date.now() > deadline)
          throw new Error(
            `timed out waiting for ${what}; produced ${stream.produced}; instances: ${instances
              .map((i) => `${i.id} alive=${i.alive} owns=[${[...i.owned()].join(',')}] stderr=${i.stderr.slice(-2000)}`)
              .join('; ')}`,
          );
        await output.lineOr(100);
      }
    }

    /** Starts an instance and waits until its app has started. */
    async function start(id: string): Promise<Instance> {
      const instance = new Instance(id, [kafkaBrokers!, topic, name, prefix, mode], output);
      instances.push(instance);
      await until(`${id} to start`, () => {
        if (!instance.alive) throw new Error(`${id} exited: ${instance.stderr}`);
        return instance.has('ready');
      });
      return instance;
    }

    /** Waits until `n` more events have been published. */
    const publishMore = async (n: number): Promise<void> => {
      const target = stream.produced + n;
      await until(`${n} more events`, () => stream.produced >= target);
    };

    /** Waits until the live instances own every shard between them, and none twice. */
    const shardsOwned = (): Promise<void> =>
      until('every shard owned by a live instance', () => {
        const owned = instances.filter((i) => i.alive).flatMap((i) => [...i.owned()]);
        return owned.length === PARTITIONS && new Set(owned).size === PARTITIONS;
      });

    /** SIGSTOP now; SIGCONT with the second call. */
    const freeze = (instance: Instance) => {
      const mark = { id: instance.id, stoppedAt: micros(), continuedAt: Infinity };
      frozen.push(mark);
      instance.child.kill('SIGSTOP');
      return () => {
        mark.continuedAt = micros();
        instance.child.kill('SIGCONT');
      };
    };

    /**
     * Stops the stream, waits until every event is in a finished run and the group's committed offsets reach
     * the end of every partition, stops every live instance (SIGTERM: app.stop()), and checks the runs.
     */
    async function drainAndCheck(): Promise<void> {
      await stream.stop();
      const counts = [...stream.next];
      await until('every key’s last event in a finished run', () => {
        const ended = new Map<string, Set<number>>();
        for (const l of output.lines)
          if (l.ev === 'end') for (const s of l.seqs!) ended.set(l.key!, (ended.get(l.key!) ?? new Set()).add(s));
        return counts.every((n, k) => n === 0 || ended.get(`k${k}`)?.has(n - 1) === true);
      });
      await until('the group’s offsets committed to the end of the topic', async () => {
        const ends = await admin.fetchTopicOffsets(topic);
        const [committed] = await admin.fetchOffsets({ groupId: name, topics: [topic] });
        return ends.every((e) => committed?.partitions.find((p) => p.partition === e.partition)?.offset === e.offset);
      });
      const live = instances.filter((i) => i.alive);
      for (const instance of live) instance.child.kill('SIGTERM');
      const exits = await Promise.all(live.map((i) => i.exited));
      for (const [n, instance] of live.entries())
        expect(exits[n], `${instance.id} stops cleanly: ${instance.stderr}`).toEqual({ code: 0, signal: null });
      checkRuns(mode, counts, broker, frozen);
    }

    return { start, publishMore, shardsOwned, freeze, drainAndCheck, until };
  }

  /**
   * The invariants, over every line of every instance: see the file's header. `counts[k]` is how many events
   * key `k<k>` was published (numbered 0…counts[k]-1); every one was acknowledged (its offset committed).
   */
  function checkRuns(
    mode: Mode,
    counts: readonly number[],
    broker: KafkaBroker,
    frozen: readonly { id: string; stoppedAt: number; continuedAt: number }[],
  ): void {
    const runLines = instances.flatMap((i) => i.lines.filter((l): l is RunLine => l.run !== undefined));
    // A run ID is one run: one key, the same events at every attempt and on every instance.
    const runs = new Map<string, RunLine>();
    for (const l of runLines) {
      const first = runs.get(l.run) ?? l;
      runs.set(l.run, first);
      expect(l.run.startsWith(`${l.key}@`), l.run).toBe(true);
      expect({ key: l.key, seqs: l.seqs, size: l.size }, `run ${l.run}`).toEqual({
        key: first.key,
        seqs: first.seqs,
        size: first.size,
      });
    }
    // Every run that started finished (by its ID, on some instance).
    const finished = new Set(runLines.filter((l) => l.ev === 'end').map((l) => l.run));
    const unfinished = [...runs.keys()].filter((id) => !finished.has(id));
    expect(unfinished, 'runs started and never finished').toEqual([]);

    const byKey = new Map<string, RunLine[]>();
    for (const run of runs.values()) byKey.set(run.key, [...(byKey.get(run.key) ?? []), run]);
    for (const [k, n] of counts.entries()) {
      const key = `k${k}`;
      // A key's runs in the order they first started.
      const own = (byKey.get(key) ?? []).sort((a, b) => a.t - b.t);
      if (mode === 'batch') {
        // Every event in exactly one run: no event twice under two run IDs, none missing.
        const seqs = own.flatMap((r) => r.seqs).sort((a, b) => a - b);
        expect(seqs, `${key}: the events of its runs`).toEqual(Array.from({ length: n }, (_, s) => s));
      } else {
        // Each run carries its window's latest start, and counts the starts since the previous run's: every
        // start in exactly one window, and the key's last run carries its latest event.
        const carried = own.map((r) => ({ seq: r.seqs[0], size: r.size }));
        let previous = -1;
        const expected = carried.map(({ seq }) => {
          const size = seq! - previous;
          previous = seq!;
          return { seq, size };
        });
        expect(carried, `${key}: each run's event and size`).toEqual(expected);
        expect(own.at(-1)?.seqs[0] ?? -1, `${key}: its last run carries its latest event`).toBe(n - 1);
      }
    }

    // No two instances run a key at once: each attempt's interval, from its start to its end (or to its
    // process's exit, for one it was in when killed). An attempt that spans a freeze counts until the freeze:
    // what its handler does after the thaw is a stalled process finishing the call it was in, which nothing
    // outside the process can stop (its partition's new owner may be running the key's next window by then);
    // that the thawed process starts nothing of a shard it lost is checked below.
    const instanceOf = new Map(instances.map((i) => [i.id, i]));
    const intervals = new Map<string, { i: string; run: string; from: number; to: number }[]>();
    for (const instance of instances) {
      const open = new Map<string, RunLine>();
      const add = (l: RunLine, to: number): void => {
        const list = intervals.get(l.key) ?? [];
        intervals.set(l.key, list);
        const freeze = frozen.find((f) => f.id === instance.id && l.t < f.stoppedAt && to > f.stoppedAt);
        list.push({ i: instance.id, run: l.run, from: l.t, to: freeze === undefined ? to : freeze.stoppedAt });
      };
      for (const l of instance.lines) {
        if (l.run === undefined) continue;
        const line = l as RunLine;
        const attempt = `${line.run}/${line.attempt}`;
        if (line.ev === 'start') open.set(attempt, line);
        else {
          add(open.get(attempt)!, line.t);
          open.delete(attempt);
        }
      }
      for (const l of open.values()) add(l, instanceOf.get(instance.id)!.exitedAt!);
    }
    for (const [key, list] of intervals)
      for (const a of list)
        for (const b of list)
          if (a.i < b.i && a.from < b.to && b.from < a.to)
            expect.fail(`${key}: ${a.i} ran ${a.run} and ${b.i} ran ${b.run} at once (${JSON.stringify({ a, b })})`);

    // A frozen instance, thawed, starts no run of a partition until it owns that partition's shard again: the
    // instance that took the shard meanwhile runs its windows.
    for (const f of frozen) {
      const instance = instanceOf.get(f.id)!;
      const ownedAgain = new Set<number>();
      for (const l of instance.lines) {
        if (l.t === undefined || l.t < f.continuedAt) continue;
        if (l.ev === 'own') ownedAgain.add(l.shard!);
        if (l.ev === 'release') ownedAgain.delete(l.shard!);
        if (l.ev !== 'start') continue;
        const shard = broker.partitionOf(l.key!, PARTITIONS);
        expect(ownedAgain.has(shard), `${f.id}, thawed, ran ${l.run} of shard ${shard} before owning it again`).toBe(
          true,
        );
      }
    }
  }

  describe.each(['batch', 'debounce'] as const)('%s', (mode) => {
    it('a second and a third instance join while events flow', async () => {
      const s = await scenario(mode);
      await s.start('a');
      await s.publishMore(120);
      await s.start('b');
      await s.publishMore(120);
      await s.start('c');
      await s.shardsOwned();
      await s.publishMore(120);
      await s.drainAndCheck();
    });

    it('an instance stopped gracefully (SIGTERM) leaves for good; the others take its windows', async () => {
      const s = await scenario(mode);
      const [, , c] = [await s.start('a'), await s.start('b'), await s.start('c')];
      await s.publishMore(150);
      c.child.kill('SIGTERM');
      expect(await c.exited).toEqual({ code: 0, signal: null });
      await s.shardsOwned();
      await s.publishMore(120);
      await s.drainAndCheck();
    });

    it('an instance killed (SIGKILL) for good: nothing it held is lost', async () => {
      const s = await scenario(mode);
      const [, , c] = [await s.start('a'), await s.start('b'), await s.start('c')];
      await s.publishMore(150);
      c.child.kill('SIGKILL');
      await c.exited;
      await s.shardsOwned(); // past its session timeout
      await s.publishMore(120);
      await s.drainAndCheck();
    });

    it('an instance killed (SIGKILL) comes back on the same store after the others took over', async () => {
      const s = await scenario(mode);
      const [, , c] = [await s.start('a'), await s.start('b'), await s.start('c')];
      await s.publishMore(150);
      c.child.kill('SIGKILL');
      await c.exited;
      await s.shardsOwned();
      await s.publishMore(90);
      await s.start('c2');
      await s.shardsOwned();
      await s.publishMore(120);
      await s.drainAndCheck();
    });

    it('an instance frozen (SIGSTOP) past its session timeout is fenced, and thawed runs nothing twice', async () => {
      const s = await scenario(mode);
      const [, , c] = [await s.start('a'), await s.start('b'), await s.start('c')];
      await s.publishMore(150);
      // Frozen in the middle of a run (the window's new owner runs it again, under its ID), with others
      // perhaps waiting for its workers.
      const seen = c.lines.length;
      await s.until('c to start a run', () => c.lines.slice(seen).some((l) => l.ev === 'start'));
      const thaw = s.freeze(c);
      // Its partitions' new owners opened their shards: its producers are fenced.
      await s.until('the others to own every shard', () => {
        const owned = instances.filter((i) => i !== c).flatMap((i) => [...i.owned()]);
        return new Set(owned).size === PARTITIONS;
      });
      await s.publishMore(90);
      thaw();
      await s.publishMore(150);
      await s.drainAndCheck();
    });
  });
});
