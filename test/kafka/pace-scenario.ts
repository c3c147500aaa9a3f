/**
 * One multi-process pace scenario on the real broker (test/kafka/pace-scenarios*.test.ts): a topic of
 * PARTITIONS partitions, an app name and a Kafka store prefix; the instances started on them, the stream of
 * events the test publishes, and the steps and waits a scenario is written with. The instances left running
 * are killed when the test ends.
 */
import { writeFileSync } from 'node:fs';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, beforeAll, expect, onTestFinished } from 'vitest';
import { uniqueTopic } from '../contract/broker-contract.js';
import type { KafkaBroker } from '../../src/brokers/kafka/index.js';
import { scenarioClient, type TestClient } from './clients.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';
import { checkRuns, wantedSeqs, type Frozen } from './pace-checks.js';
import {
  Instance,
  Output,
  PARTITIONS,
  Stream,
  micros,
  type Mode,
  type RunLine,
  type StreamOptions,
} from './pace-instances.js';
import { uniquePrefix } from './store-fixture.js';

/** The longest any one wait of a scenario may take: a bound, not a synchronisation. */
const WAIT_MS = 45_000;

/** What a scenario starts with. */
export interface ScenarioOptions {
  /** The stream's options; `false` for none (the events are sent). */
  readonly stream?: StreamOptions | false;
  /** The instances' client (see test/kafka/clients.ts). @default `scenarioClient`: the Node line's */
  readonly client?: TestClient['arg'];
}

/** A scenario's topic, store and stream (publishing from its start), and its steps. */
export class Scenario {
  readonly instances: Instance[] = [];
  /** The test's stream of events, unless the scenario's events are sent. */
  readonly stream: Stream | undefined;
  /** The store's requests topic: forwarded deliveries and routed sends. */
  readonly requests: string;
  private readonly output = new Output();
  private readonly frozen: Frozen[] = [];
  /** `Date.now()` before the first event was published (or the scenario began). */
  private readonly startedAt: number;

  private constructor(
    private readonly admin: Admin,
    private readonly mode: Mode,
    private readonly broker: KafkaBroker,
    private readonly topic: string,
    private readonly name: string,
    private readonly prefix: string,
    private readonly options: ScenarioOptions,
  ) {
    this.requests = `${prefix}.requests`;
    this.stream = options.stream === false ? undefined : new Stream(broker, topic, options.stream);
    this.startedAt = this.stream?.startedAt ?? Date.now();
    onTestFinished(() => this.end());
  }

  /** A new topic, app name and store prefix; the stream publishing. The instances are killed when the test ends. */
  static async open(admin: Admin, mode: Mode, options: ScenarioOptions = {}): Promise<Scenario> {
    const broker = testKafka();
    const topic = uniqueTopic(`scen-${mode}`);
    await broker.createTopic(topic, PARTITIONS);
    return new Scenario(admin, mode, broker, topic, `scen-${uniquePrefix(mode)}`, uniquePrefix('scen'), {
      ...options,
      client: options.client ?? scenarioClient,
    });
  }

  /** Waits (bounded) until `cond` holds, looking again at each line and at least every 100 ms. */
  async until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; ${this.describe()}`);
      await this.output.lineOr(100);
    }
  }

  /** Starts an instance (its clock `aheadMs` ahead of the system's) and waits until its app has started. */
  async start(id: string, aheadMs = 0): Promise<Instance> {
    const args = [kafkaBrokers!, this.topic, this.name, this.prefix, this.mode, String(aheadMs)];
    const instance = new Instance(id, args, this.output, this.options.client);
    this.instances.push(instance);
    await this.until(`${id} to start`, () => {
      if (!instance.alive) throw new Error(`${id} exited: ${instance.stderr}`);
      return instance.has('ready');
    });
    return instance;
  }

  /** Waits until `n` more events have been published. */
  async publishMore(n: number): Promise<void> {
    const stream = this.stream!;
    const target = stream.produced + n;
    await this.until(`${n} more events`, () => stream.produced >= target);
  }

  /** The instances that have not exited. */
  live(): Instance[] {
    return this.instances.filter((i) => i.alive);
  }

  /** Waits until the live instances own every shard between them, and none twice. */
  shardsOwned(): Promise<void> {
    return this.until('every shard owned by a live instance', () => {
      const owned = this.live().flatMap((i) => [...i.owned()]);
      return owned.length === PARTITIONS && new Set(owned).size === PARTITIONS;
    });
  }

  /** SIGKILL, and its exit. */
  async kill(instance: Instance): Promise<void> {
    instance.child.kill('SIGKILL');
    await instance.exited;
  }

  /** SIGSTOP now; SIGCONT with the second call. */
  freeze(instance: Instance): () => void {
    const mark = { id: instance.id, stoppedAt: micros(), continuedAt: Infinity };
    this.frozen.push(mark);
    instance.child.kill('SIGSTOP');
    return () => {
      mark.continuedAt = micros();
      instance.child.kill('SIGCONT');
    };
  }

  /** Waits until the events `seqs(n)` of every key (given `n` events) are in finished runs. */
  runsEnded(counts: readonly number[], seqs = (n: number) => wantedSeqs(this.mode, n)): Promise<void> {
    return this.until('every key’s events in finished runs', () => {
      const done = this.ended();
      return counts.every((n, k) => seqs(n).every((s) => done.get(`k${k}`)?.has(s) === true));
    });
  }

  /** Stops every live instance (SIGTERM: app.stop()), each cleanly. */
  async stopAll(): Promise<void> {
    const stopping = this.live();
    for (const instance of stopping) instance.child.kill('SIGTERM');
    const exits = await Promise.all(stopping.map((i) => i.exited));
    for (const [n, instance] of stopping.entries())
      expect(exits[n], `${instance.id} stops cleanly: ${instance.stderr}`).toEqual({ code: 0, signal: null });
  }

  /**
   * Stops the stream, waits until every event that must run is in a finished run and the group's committed
   * offsets reach the end of every partition of the topic and of the requests topic, stops every live
   * instance, and checks the runs (see pace-checks.ts). `counts[k]`: how many events key k got (the
   * stream's, unless given). Returns the runs by ID.
   */
  async drainAndCheck(counts?: readonly number[]): Promise<Map<string, RunLine>> {
    await this.stream?.stop();
    const given = counts ?? [...this.stream!.next];
    await this.runsEnded(given);
    await this.committed(this.topic);
    await this.committed(this.requests);
    await this.stopAll();
    const { mode, instances, frozen, startedAt, broker } = this;
    const partitionOf = (key: string): number => broker.partitionOf(key, PARTITIONS);
    return checkRuns({ mode, instances, counts: given, frozen, partitionOf, startedAt });
  }

  /** The events of finished runs, by key. */
  private ended(): Map<string, Set<number>> {
    const seqs = new Map<string, Set<number>>();
    for (const l of this.output.lines)
      if (l.ev === 'end') for (const s of l.seqs!) seqs.set(l.key!, (seqs.get(l.key!) ?? new Set()).add(s));
    return seqs;
  }

  /** Waits until the group's committed offsets reach the end of every partition of `topic`. */
  private committed(topic: string): Promise<void> {
    return this.until(`the group’s offsets committed to the end of ${topic}`, async () => {
      const ends = await this.admin.fetchTopicOffsets(topic);
      const [group] = await this.admin.fetchOffsets({ groupId: this.name, topics: [topic] });
      const at = (p: number): string | undefined => group?.partitions.find((g) => g.partition === p)?.offset;
      return ends.every((e) => e.offset === '0' || at(e.partition) === e.offset);
    });
  }

  private describe(): string {
    const instances = this.instances.map(
      (i) => `${i.id} alive=${i.alive} owns=[${[...i.owned()].join(',')}] stderr=${i.stderr.slice(-2000)}`,
    );
    return `produced ${this.stream?.produced}; instances: ${instances.join('; ')}`;
  }

  /**
   * The test ended: kills the instances left; with `SLUICE_SCENARIO_DUMP` set to a directory, writes every
   * line the instances printed to `<dir>/<app name>.jsonl`, and what each logged to `<dir>/<app name>.<id>.stderr`,
   * to read a failure by.
   */
  private async end(): Promise<void> {
    for (const instance of this.instances) if (instance.alive) instance.child.kill('SIGKILL');
    await Promise.all(this.instances.map((i) => i.exited));
    await this.stream?.stop();
    const dir = process.env.SLUICE_SCENARIO_DUMP;
    if (!dir) return;
    writeFileSync(`${dir}/${this.name}.jsonl`, this.output.lines.map((l) => JSON.stringify(l)).join('\n'));
    for (const i of this.instances) writeFileSync(`${dir}/${this.name}.${i.id}.stderr`, i.stderr);
  }
}

/**
 * For a describe block of scenarios: an admin client connected before its tests and, after them, disconnected
 * with every client the fixtures made. Returns a getter (the client exists once `beforeAll` ran).
 */
export function scenarioAdmin(): () => Admin {
  let admin: Admin | undefined;
  beforeAll(async () => {
    admin = new Kafka({ clientId: 'scenarios', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.disconnect();
    await closeAll();
  });
  return () => admin!;
}
