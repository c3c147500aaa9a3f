/**
 * The partitioned world: shards owned by partition. One to three instances of one app (one consumer group)
 * share a MemoryBroker, whose topic `ev` has P = 2 to 4 partitions, a memoryStore of P shards owned by
 * partition, and a ManualClock (each instance may read it up to a second behind). The app has one paced
 * subscriber, picked by the seed among the batch, debounce, per-minute and drop subscribers that `app.send`
 * feeds in world.ts. One seed decides everything: keyed events published to the topic, `app.send` on a
 * random instance (refused with SHARD_NOT_OWNED where the key's partition is not owned: not acknowledged),
 * retries of an earlier event ID on any instance, the clock, handlers settling, and instances starting
 * (join, a rebalance), stopping gracefully (leave), crashing (abandoned: its consumer leaves the group
 * without settling anything, its timers never fire again, its store calls never answer, its pacer is
 * never closed) and turning zombie (its consumer is taken out of the group, and the others open its shards,
 * fencing it, while its app, timers and handlers go on). What happened is recorded in an OwnersHistory for
 * the checkers (owners-checkers.ts).
 */
import {
  App,
  HandlerOutcome,
  ManualClock,
  MemoryBroker,
  memoryStore,
  type Clock,
  type Consumer,
  type Context,
  type HandlerResult,
  type Logger,
  type MemoryStore,
  type Receipt,
} from '../../src/index.js';
import type { Faults, ShardLog, Store } from '../../src/core/ports.js';
import type { Outcome } from './checkers.js';
import { ownersLiveness, type OwnersHistory, type OwnersRun } from './owners-checkers.js';
import { cutBroker, FAULTS, SEND_SUBS, sendSubscriber, settledYet, T0, turn, type SendSub } from './parts.js';
import { Random } from './random.js';

const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
const TOPIC = 'ev';
const GROUP = 'owners';
/** The most instances members of the group at once. */
const MAX_MEMBERS = 3;
/** The quiet phase's rounds at most: 400, then 10 s steps for up to six simulated hours. */
const QUIET_ROUNDS = 400 + 4 * 2_160;
/** Warnings that say a hand-over (or a stop) let go of work still running: its next owner may run it again. */
const LATE = /still running|did not finish in time|shutdown timeout|timed out/;

export interface OwnersWorldOptions {
  readonly seed: number;
  /** Scheduler steps with faults, before the quiet phase that checks liveness. @default 300 */
  readonly steps?: number;
  /** A broken engine: the faults injected into every instance (none for the real engine). */
  readonly faults?: Faults;
}

type State = 'starting' | 'running' | 'stopping' | 'stopped' | 'crashed' | 'zombie';

interface Instance {
  readonly n: number;
  readonly app: App;
  readonly consumers: Consumer[];
  state: State;
  /** Its consumer is in the group (false once crashed or cut off). */
  member: boolean;
  /** The process is gone: nothing it does is seen again. */
  dead: boolean;
  /** Takes it out of the group: a revoke it is in the middle of is over for the group. */
  readonly cut: () => void;
  stopped?: Promise<void>;
}

interface Waiting {
  readonly instance: Instance;
  readonly run: OwnersRun;
  readonly settle: (result: HandlerResult | Error) => void;
}

const never = <T>(): Promise<T> => new Promise<T>(() => {});

export class OwnersWorld {
  readonly random: Random;
  readonly partitions: number;
  readonly sub: SendSub;
  /** The instances' `shutdownTimeoutMs`, which is also how long a revoke waits for its work. */
  private readonly deadlineMs: number;
  readonly clock = new ManualClock(T0);
  readonly broker: MemoryBroker;
  readonly store: MemoryStore;
  readonly history: OwnersHistory;
  private readonly instances: Instance[] = [];
  private readonly waiting: Waiting[] = [];
  /** eventId → the event it names, so that a retried send carries the same event. */
  private readonly ids = new Map<string, { key: string; n: number }>();
  private readonly injected: object;
  private now = T0;
  private n = 0;
  private uuids = 0;

  constructor(private readonly options: OwnersWorldOptions) {
    this.injected = { [FAULTS]: options.faults ?? {} };
    this.random = new Random(options.seed);
    this.partitions = 2 + this.random.int(3);
    this.sub = this.random.pick(SEND_SUBS);
    // Mostly a revoke (and a stop) waits long enough for its handlers; now and then its deadline fires.
    this.deadlineMs = this.random.chance(0.25) ? 5_000 : 600_000;
    this.broker = new MemoryBroker({ topics: { [TOPIC]: this.partitions }, now: () => this.clock.now() });
    this.store = memoryStore({ shards: this.partitions, ownership: 'partition' });
    this.history = {
      sub: this.sub,
      sends: [],
      acks: [],
      drops: [],
      published: [],
      runs: [],
      lives: [],
      notes: [`${this.partitions} partitions, subscriber ${this.sub}, deadlines of ${this.deadlineMs} ms`],
      ticks: 0,
      instances: [],
      errors: [],
      committed: [],
      endOffsets: [],
    };
  }

  /** A moment of the world: every start and end of a handler, crash, cut and warning takes the next. */
  private tick(): number {
    return ++this.history.ticks;
  }

  /** Runs the seed: steps with faults, then a quiet phase until everything settles. */
  async run(): Promise<Outcome> {
    const first = 1 + this.random.int(2);
    for (let i = 0; i < first; i++) this.startOne();
    await this.pumpUntil(Promise.all(this.instances.map((i) => this.startedOf(i))));
    const steps = this.options.steps ?? 300;
    for (let step = 0; step < steps; step++) await this.step(step);
    return this.quiet();
  }

  private readonly started = new Map<Instance, Promise<void>>();

  private startedOf(i: Instance): Promise<void> {
    return this.started.get(i) ?? Promise.resolve();
  }

  private async step(step: number): Promise<void> {
    const action = this.random.weighted([28, 15, 10, 10, 22, 2, 1.2, 0.8, 0.6, 1]);
    switch (action) {
      case 0:
        this.send();
        break;
      case 1:
        this.publish();
        break;
      case 2:
        await turn();
        break;
      case 3:
        await this.advance();
        break;
      case 4:
        this.settleOne();
        await turn();
        break;
      case 5:
        if (this.members().length < MAX_MEMBERS) {
          const i = this.startOne();
          this.history.notes.push(`step ${step}: instance ${i.n} starts`);
        }
        break;
      case 6: {
        const running = this.live().filter((i) => i.state === 'running');
        if (running.length === 0) break;
        const i = this.random.pick(running);
        this.history.notes.push(`step ${step}: instance ${i.n} stops`);
        this.stopOne(i);
        break;
      }
      case 7: {
        const alive = this.live().filter((i) => i.state !== 'zombie');
        if (alive.length === 0) break;
        const i = this.random.pick(alive);
        this.history.notes.push(`step ${step}: instance ${i.n} crashes`);
        await this.crash(i);
        break;
      }
      case 8: {
        const running = this.live().filter((i) => i.state === 'running');
        if (running.length === 0) break;
        const i = this.random.pick(running);
        this.history.notes.push(`step ${step}: instance ${i.n} turns zombie`);
        await this.cutOff(i);
        break;
      }
      case 9: {
        // The subscriber paused (or resumed) in the shards an instance owns: a pause goes with a shard that moves.
        const running = this.live().filter((i) => i.state === 'running');
        if (running.length === 0) break;
        const i = this.random.pick(running);
        const pause = this.random.chance(0.5);
        this.history.notes.push(`step ${step}: instance ${i.n} ${pause ? 'pauses' : 'resumes'}`);
        void (pause ? i.app.pause(this.sub) : i.app.resume(this.sub)).catch(() => {});
        break;
      }
    }
  }

  /** Instances whose process lives (zombies included) and that have not stopped. */
  private live(): Instance[] {
    return this.instances.filter((i) => !i.dead && i.state !== 'stopped');
  }

  /** Instances in the group, or joining it. */
  private members(): Instance[] {
    return this.instances.filter((i) => i.member && (i.state === 'starting' || i.state === 'running'));
  }

  private async advance(): Promise<void> {
    // As in world.ts: mostly on a grid of the windows' lengths, or a millisecond before a timer.
    // (A timer past a per-minute rate's minute is a revoke's or a stop's deadline: not jumped to.)
    const due = this.clock.nextDueMs();
    if (due !== undefined && due > this.now + 1 && due <= this.now + 61_000 && this.random.chance(0.3))
      this.now = due - 1;
    else
      this.now += this.random.chance(0.5)
        ? this.random.pick([0, 1, 100, 250, 499, 500, 999, 1000])
        : this.random.int(1200);
    await this.clock.advanceTo(this.now);
  }

  /** A new instance of the app joins the group: its start goes on while the world does. */
  private startOne(): Instance {
    const n = this.instances.length + 1;
    const behind = this.random.chance(0.5) ? this.random.int(1000) : 0;
    const consumers: Consumer[] = [];
    let instance: Instance;
    const dead = (): boolean => instance.dead;
    const shared = this.clock;
    const clock: Clock = {
      now: () => shared.now() - behind,
      setTimer: (ms, fire) => shared.setTimer(ms, () => (dead() ? undefined : fire())),
    };
    let cut!: () => void;
    const whenCut = new Promise<void>((resolve) => (cut = resolve));
    const broker = cutBroker(
      this.broker,
      () => !instance.member,
      (inner) => {
        consumers.push(inner);
        if (!instance.member) void inner.close(); // joined after it died: it leaves at once
      },
      whenCut,
    );
    const app = new App({
      name: GROUP,
      clock,
      store: deadStore(this.store, dead),
      logger: this.logger(n),
      shutdownTimeoutMs: this.deadlineMs,
      randomUUID: () => `u${++this.uuids}`,
      ...this.injected,
    }).withBroker(broker, (b) =>
      b.include(sendSubscriber(this.sub, TOPIC, (payload, ctx) => this.handle(instance, payload, ctx))),
    );
    instance = { n, app, consumers, state: 'starting', member: true, dead: false, cut };
    this.instances.push(instance);
    this.history.instances.push({ n, late: [] });
    this.history.lives.push({ n, end: 'running' });
    const started = app.start().then(
      () => {
        if (instance.state === 'starting') instance.state = 'running';
      },
      (error: unknown) => {
        if (instance.dead || !instance.member) return;
        this.history.errors.push(`instance ${n} failed to start: ${String((error as Error)?.stack ?? error)}`);
        instance.state = 'stopped';
        instance.member = false;
      },
    );
    this.started.set(instance, started);
    return instance;
  }

  /** Records the warnings that excuse a second run of work let go (see LATE). */
  private logger(n: number): Logger {
    const record = (message: string): void => {
      if (LATE.test(message)) {
        const at = this.tick();
        this.history.instances[n - 1]!.late.push(at);
        this.history.notes.push(`moment ${at}: instance ${n} warned: ${message}`);
      }
    };
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (message) => record(message),
      error: (message) => record(message),
      child: () => logger,
    };
    return logger;
  }

  /** A graceful stop: the instance leaves the group once its work is handed over; the world goes on meanwhile. */
  private stopOne(i: Instance): void {
    i.state = 'stopping';
    i.stopped = i.app.stop().then(
      () => {
        if (i.dead) return;
        i.state = 'stopped';
        i.member = false;
        this.history.lives[i.n - 1]!.end = 'stop';
      },
      (error: unknown) => {
        if (i.dead) return;
        this.history.errors.push(`instance ${i.n} failed to stop: ${String((error as Error)?.stack ?? error)}`);
      },
    );
  }

  /** The process dies: nothing it has in flight completes; its consumer leaves the group without a commit. */
  private async crash(i: Instance): Promise<void> {
    const at = this.tick();
    i.dead = true;
    i.member = false;
    i.state = 'crashed';
    i.cut();
    this.history.instances[i.n - 1]!.cutAt ??= at;
    this.history.lives[i.n - 1]!.end = 'crash';
    for (const w of this.waiting.filter((w) => w.instance === i)) {
      w.run.to = at;
      this.waiting.splice(this.waiting.indexOf(w), 1);
    }
    for (const c of i.consumers) void c.close();
    await turn();
  }

  /** The instance is taken out of the group (the others take its partitions) while it runs on. */
  private async cutOff(i: Instance): Promise<void> {
    i.member = false;
    i.state = 'zombie';
    i.cut();
    this.history.instances[i.n - 1]!.cutAt = this.tick();
    for (const c of i.consumers) void c.close();
    await turn();
  }

  /** Faults over: a member in the group, every handler settled, until every window ran; then all stop. */
  private async quiet(): Promise<Outcome> {
    if (this.members().length === 0) this.startOne();
    for (let round = 0; round < QUIET_ROUNDS; round++) {
      if (round >= 400 && round % 4 === 0 && this.settledNow() && ownersLiveness(this.history).length === 0) break;
      for (const w of this.waiting.splice(0)) this.settle(w, HandlerOutcome.ack());
      // Every shard resumed, by whoever owns it now (again now and then: ownership may still move).
      if (round % 50 === 0)
        for (const i of this.live()) if (i.state === 'running') void i.app.resume(this.sub).catch(() => {});
      await turn();
      if (round % 4 === 3) await this.clock.advanceTo((this.now += round < 200 ? 1000 : 10_000));
    }
    // Zombies die at last; the members stop, committing what they consumed.
    for (const i of this.live().filter((i) => i.state === 'zombie')) await this.crash(i);
    for (const i of this.live()) if (i.state === 'running') this.stopOne(i);
    await this.pumpUntil(Promise.all(this.live().map((i) => this.startedOf(i))));
    for (const i of this.live()) if (i.state === 'running') this.stopOne(i);
    await this.pumpUntil(Promise.all(this.live().map((i) => i.stopped ?? Promise.resolve())));
    this.history.committed.push(...this.broker.committed(GROUP, TOPIC));
    this.history.endOffsets.push(...this.broker.endOffsets(TOPIC));
    return { kind: 'ran' };
  }

  /** No instance starting or stopping. */
  private settledNow(): boolean {
    return this.instances.every((i) => i.dead || (i.state !== 'starting' && i.state !== 'stopping'));
  }

  private send(): void {
    const live = this.live();
    if (live.length === 0) return;
    const instance = this.random.pick(live);
    const earlier = [...this.ids.entries()];
    if (earlier.length > 0 && this.random.chance(0.15)) {
      // A sender retries an earlier send, maybe on another instance: the same ID, the same event.
      const [id, e] = this.random.pick(earlier);
      return this.sendOne(instance, e.key, e.n, id);
    }
    const n = ++this.n;
    const key = this.random.pick(KEYS);
    let eventId: string | undefined;
    if (this.random.chance(0.5)) this.ids.set((eventId = `id-${n}`), { key, n });
    this.sendOne(instance, key, n, eventId);
  }

  private sendOne(instance: Instance, key: string, n: number, eventId: string | undefined): void {
    const sub = this.sub;
    const send = { life: instance.n, sub, key, n, eventId, at: this.tick() };
    this.history.sends.push(send);
    instance.app.send(sub, { key, event: { n }, eventId }).then(
      (receipt: Receipt) => {
        if (instance.dead) return;
        const at = this.tick();
        if (receipt.kind === 'run')
          this.history.acks.push({
            life: instance.n,
            sub,
            key,
            n,
            eventId,
            runId: receipt.runId,
            duplicate: receipt.duplicate,
            sentAt: send.at,
            at,
          });
        else this.history.drops.push({ life: instance.n, sub, key, n, eventId });
      },
      () => {}, // not acknowledged (SHARD_NOT_OWNED, STORE_FENCED, not started…): the sender does not know
    );
  }

  private publish(): void {
    const n = ++this.n;
    const key = this.random.pick(KEYS);
    const m = this.broker.publishNow(TOPIC, { n }, { key });
    this.history.published.push({ key, n, partition: m.partition, offset: m.offset });
  }

  private handle(instance: Instance, payload: unknown, ctx: Context): Promise<HandlerResult> {
    if (instance.dead) return never(); // a dead process runs nothing
    const events = (Array.isArray(payload) ? payload : [payload]).map((e) => (e as { n: number }).n);
    const run = ctx.run!;
    const record: OwnersRun = {
      life: instance.n,
      sub: this.sub,
      runId: run.id,
      key: run.key,
      size: run.size,
      startedAt: run.startedAt,
      events,
      attempt: ctx.message.attempt,
      finished: false,
      from: this.tick(),
    };
    this.history.runs.push(record);
    return new Promise((resolve, reject) => {
      this.waiting.push({
        instance,
        run: record,
        settle: (result) => {
          if (result instanceof Error) return reject(result);
          if (result === undefined || result === HandlerOutcome.ack()) record.finished = true;
          resolve(result);
        },
      });
    });
  }

  private settle(w: Waiting, result: HandlerResult | Error): void {
    w.run.to = this.tick();
    w.settle(result);
  }

  private settleOne(): void {
    if (this.waiting.length === 0) return;
    const [w] = this.waiting.splice(this.random.int(this.waiting.length), 1);
    const r = this.random.weighted([75, 15, 10]);
    this.settle(w!, r === 0 ? HandlerOutcome.ack() : r === 1 ? new Error('handler failed') : HandlerOutcome.retry());
  }

  /** Lets the world run until `promise` settles: handlers finish, and now and then the clock moves on. */
  private async pumpUntil(promise: Promise<unknown>): Promise<void> {
    for (let i = 0; i < 10_000 && !(await settledYet(promise)); i++) {
      for (const w of this.waiting.splice(0)) this.settle(w, HandlerOutcome.ack());
      if (i % 100 === 99) await this.clock.advanceTo((this.now += 1000));
      await turn();
    }
    if (!(await settledYet(promise)))
      this.history.errors.push(
        `an instance did not finish starting or stopping: ${this.instances.map((i) => `${i.n} ${i.state}${i.dead ? ' (dead)' : ''}`).join(', ')}`,
      );
  }
}

/**
 * The shared store as one process sees it: once the process is dead, it calls nothing more (a crashed
 * process fences nobody) and hears no answer to a call it made before.
 */
function deadStore(shared: MemoryStore, dead: () => boolean): Store {
  const answer = <T>(p: Promise<T>): Promise<T> =>
    p.then(
      (v) => (dead() ? never<T>() : v),
      (e: unknown) => (dead() ? never<T>() : Promise.reject(e as Error)),
    );
  const call = <T>(f: () => Promise<T>): Promise<T> => (dead() ? never<T>() : answer(f()));
  const logOf = (log: ShardLog): ShardLog => ({
    shard: log.shard,
    append: (record) => call(() => log.append(record)),
    assignedLsn: () => log.assignedLsn(),
    durableLsn: () => log.durableLsn(),
    replay: (from, visit) => call(() => log.replay(from, visit)),
    writeSnapshot: (lsn, state) => call(() => log.writeSnapshot(lsn, state)),
    readSnapshot: () => call(() => log.readSnapshot()),
  });
  return {
    shards: shared.shards,
    ownership: shared.ownership,
    snapshotEvery: 8, // snapshots often, so that hand-overs meet them
    open: () => call(() => shared.open()),
    close: () => call(() => shared.close()),
    log: (shard) => logOf(shared.log(shard)),
    openShard: (shard) => call(() => shared.openShard!(shard)).then(logOf),
    closeShard: (shard) => call(() => shared.closeShard!(shard)),
  };
}
