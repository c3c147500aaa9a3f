/**
 * The simulated world: one seed decides everything — which sender sends what when, which broker messages
 * arrive, when the disk completes writes and fsyncs, when handlers finish or fail, when the clock moves,
 * when the process crashes or stops, when an fsync fails or a bit flips — and the real App, Pacer, shard
 * hosts and file store (of 1 to 4 shards) run in it on a simulated disk (sim-disk.ts) and a ManualClock.
 * While a life starts, its disk completes a few operations a turn, its clock moves on and its handlers
 * finish, as they do beside a real start: a run let out early meets the rest of the start. Nothing touches a
 * real disk or a real timer, so a failing seed replays exactly. What happened is recorded in a History
 * for the checkers (checkers.ts).
 */
import {
  App,
  HandlerOutcome,
  type Clock,
  ManualClock,
  MemoryBroker,
  fileStore,
  silentLogger,
  subscriber,
  type Consumer,
  type Context,
  type HandlerResult,
  type Receipt,
} from '../../src/index.js';
import type { Faults } from '../../src/core/ports.js';
import { everyWindowRan, type History, type Outcome } from './checkers.js';
import { cutBroker, FAULTS, SEND_SUBS, sendSubscriber, settledYet, T0, turn } from './parts.js';
import { Random } from './random.js';
import { SimDisk } from './sim-disk.js';
import { PAUSABLE, Pauses } from './pauses.js';

const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4'];
/** The quiet phase's rounds at most: 400, then 10 s steps for up to six simulated hours. */
const QUIET_ROUNDS = 400 + 4 * 2_160;

export interface WorldOptions {
  readonly seed: number;
  /** Scheduler steps with faults, before the quiet phase that checks liveness. @default 300 */
  readonly steps?: number;
  /** A broken engine: the faults injected into the app and its store (none for the real engine). */
  readonly faults?: Faults;
}

interface Waiting {
  readonly life: number;
  readonly settle: (result: HandlerResult | Error) => void;
}

interface Life {
  readonly n: number;
  readonly app: App;
  readonly clock: ManualClock;
  readonly consumers: Consumer[];
  dead: boolean;
  fatal: boolean;
}

/** A broker for one life: when the life dies, its consumers stop taking and committing, and leave the group. */
const lifeBroker = (shared: MemoryBroker, life: () => Life | undefined, consumers: Consumer[]) =>
  cutBroker(
    shared,
    () => life()?.dead ?? false,
    (inner) => consumers.push(inner),
  );

export class World {
  readonly random: Random;
  /**
   * Choices made while a life starts (its I/O, its clock, its handlers) and the shard count: a stream of
   * their own, so that they leave the scheduler's choices as they were.
   */
  private readonly io: Random;
  private readonly shards: number;
  readonly disk: SimDisk;
  readonly broker = new MemoryBroker({ partitions: 2 });
  readonly history: History = {
    sends: [],
    acks: [],
    drops: [],
    published: [],
    runs: [],
    lives: [],
    notes: [],
    pauses: [],
  };
  private readonly pauses = new Pauses(this.history.pauses!);
  private life: Life | undefined;
  private lives = 0;
  private now = T0;
  private n = 0;
  private readonly waiting: Waiting[] = [];
  /** eventId → the event it names, so that a retried send carries the same event. */
  private readonly ids = new Map<string, { sub: string; key: string; n: number }>();
  private flipped = false;
  private uuids = 0;

  /** The injected faults, spread into the options of the app and of its store. */
  private readonly injected: object;

  constructor(private readonly options: WorldOptions) {
    this.injected = { [FAULTS]: options.faults ?? {} };
    this.random = new Random(options.seed);
    this.io = new Random((options.seed ^ 0x5bd1e995) >>> 0);
    this.shards = 1 + this.io.int(4);
    this.disk = new SimDisk(this.random);
  }

  /** Runs the seed: steps with faults, then a quiet phase until everything settles. */
  async run(): Promise<Outcome> {
    if (!(await this.start())) return { kind: 'corrupt-at-start' };
    const steps = this.options.steps ?? 300;
    this.disk.fsyncFailure = 0.01;
    for (let step = 0; step < steps; step++) {
      const life = this.life!;
      if (life.fatal) {
        this.history.notes.push(`step ${step}: the store failed (fsync): crash and restart`);
        await this.crash();
        if (!(await this.start())) return { kind: 'corrupt', at: step };
        continue;
      }
      const outcome = await this.step(step);
      if (outcome) return outcome;
    }
    this.disk.fsyncFailure = 0;
    if (this.life!.fatal) {
      await this.crash();
      if (!(await this.start())) return { kind: 'corrupt', at: steps };
    }
    return this.quiet();
  }

  private async step(step: number): Promise<Outcome | undefined> {
    const action = this.random.weighted([30, 12, 25, 8, 10, 15, 1.5, 1, 0.05, 1]);
    switch (action) {
      case 0:
        this.send();
        break;
      case 1:
        this.publish();
        break;
      case 2:
        this.disk.complete(1 + this.random.int(6));
        await turn();
        break;
      case 3:
        await turn();
        break;
      case 4: {
        // Mostly on a grid of the windows' lengths, so that events land exactly at, or a millisecond
        // before, a window's end — where boundary bugs live.
        const due = this.life!.clock.nextDueMs();
        if (due !== undefined && due > this.now + 1 && this.random.chance(0.3))
          this.now = due - 1; // a millisecond before a timer: a window's end
        else
          this.now += this.random.chance(0.5)
            ? this.random.pick([0, 1, 100, 250, 499, 500, 999, 1000])
            : this.random.int(1200);
        await this.life!.clock.advanceTo(this.now);
        break;
      }
      case 5:
        this.settleOne();
        await turn();
        break;
      case 6:
        this.history.notes.push(`step ${step}: crash`);
        await this.crash();
        if (!(await this.start())) return { kind: 'corrupt', at: step };
        break;
      case 7:
        this.history.notes.push(`step ${step}: graceful restart`);
        await this.stop();
        if (!(await this.start())) return { kind: 'corrupt', at: step };
        break;
      case 8: {
        if (this.flipped) break;
        await this.crash();
        const where = this.disk.flipBit();
        if (where === false) {
          if (!(await this.start())) return { kind: 'corrupt', at: step };
          break;
        }
        this.flipped = true;
        this.history.notes.push(`step ${step}: crash, then a bit flipped in ${where}`);
        if (!(await this.start())) return { kind: 'flip-detected', at: step };
        return { kind: 'flip-missed', at: step, where };
      }
      case 9: {
        const life = this.life!;
        this.pauses.toggle(
          life.app,
          this.random.pick(PAUSABLE),
          () => this.now,
          () => life.dead,
        );
        break;
      }
    }
    return undefined;
  }

  /** Starts a new life on what the disk holds. False when the store refuses it (STORE_CORRUPT). */
  private async start(): Promise<boolean> {
    const n = ++this.lives;
    // A new process may read a clock a little behind the last one's (another machine's, or one stepped back)
    // until the world's clock next moves: up to a second.
    const clock = new ManualClock(this.now - (this.random.chance(0.5) ? this.random.int(1000) : 0));
    const consumers: Consumer[] = [];
    let life: Life | undefined;
    const store = fileStore({
      dir: '/sim',
      shards: this.shards,
      segmentBytes: 1024,
      snapshotEvery: 8,
      fs: this.disk.mount(1000 + n),
      onFatal: () => life && (life.fatal = true),
      ...this.injected,
    });
    const handler = (sub: string) => (payload: unknown, ctx: Context) => this.handle(n, sub, payload, ctx);
    // The app reads a clock that may tick between two reads, as a real one does: a read moves it on by a
    // millisecond now and then (never back), while timers fire on the manual clock underneath.
    let skew = 0;
    const ticking: Clock = {
      now: () => clock.now() + (this.random.chance(0.05) ? ++skew : skew),
      setTimer: (ms, fire) => clock.setTimer(ms, fire),
    };
    const app = new App({
      name: 'sim',
      clock: ticking,
      store,
      logger: silentLogger,
      shutdownTimeoutMs: 2_000,
      randomUUID: () => `u${++this.uuids}`,
      ...this.injected,
    }).withBroker(
      lifeBroker(this.broker, () => life, consumers),
      (b) =>
        b.include(
          sendSubscriber('bat', 'bat-topic', handler('bat')),
          sendSubscriber('deb', 'deb-topic', handler('deb')),
          subscriber('clicks', handler('clk'))
            .name('clk')
            .pace({ batch: { max: 3, wait: 800 } })
            .retry({ attempts: 3, backoff: { initialMs: 100, maxMs: 100 } })
            .build(),
          sendSubscriber('pm', 'pm-topic', handler('pm')),
          sendSubscriber('drp', 'drp-topic', handler('drp')),
        ),
    );
    life = { n, app, clock, consumers, dead: false, fatal: false };
    this.life = life;
    this.history.lives.push({ n, end: 'running' });
    try {
      await this.pump(app.start());
      return true;
    } catch (error) {
      if (
        (error as { code?: string }).code === 'STORE_CORRUPT' &&
        !String((error as Error).message).includes('fsync')
      ) {
        this.history.notes.push(`life ${n}: the store refused to open: ${(error as Error).message}`);
        life.dead = true;
        return false;
      }
      if ((error as { code?: string }).code === 'EIO' || life.fatal) {
        // An fsync failed while the store opened: this process dies too; the next one tries again.
        this.history.notes.push(`life ${n}: an fsync failed during start: crash and restart`);
        await this.crash();
        return this.start();
      }
      throw error;
    }
  }

  /** The process dies: nothing it had in flight completes; its group membership ends without a commit. */
  private async crash(): Promise<void> {
    const life = this.life!;
    life.dead = true;
    this.history.lives[life.n - 1]!.end = 'crash';
    this.disk.crash();
    for (const c of life.consumers) await c.close();
    this.waiting.length = 0;
  }

  /** A graceful stop: handlers in flight finish, what finished is committed and journaled. */
  private async stop(): Promise<void> {
    const life = this.life!;
    const fsyncFailure = this.disk.fsyncFailure;
    this.disk.fsyncFailure = 0;
    const stopped = life.app.stop();
    for (let i = 0; i < 10_000 && !(await settledYet(stopped)); i++) {
      for (const w of this.waiting.splice(0)) w.settle(HandlerOutcome.ack());
      this.disk.complete(Number.POSITIVE_INFINITY);
      if (i % 100 === 99) await life.clock.advanceTo((this.now += 1000));
      await turn();
    }
    await stopped;
    this.disk.fsyncFailure = fsyncFailure;
    life.dead = true;
    this.history.lives[life.n - 1]!.end = life.fatal ? 'crash' : 'stop';
    if (life.fatal) this.disk.crash();
  }

  /** Faults over: complete everything, let every window close, every waiting start go and every run finish. */
  private async quiet(): Promise<Outcome> {
    this.pauses.resumeAll(this.life!.app, () => this.now);
    for (let round = 0; round < QUIET_ROUNDS; round++) {
      // After 400 rounds, on as long as liveness still misses something: a longer seed leaves a longer
      // backlog of starts waiting for a per-minute rate, and the rate lets only so many go a minute.
      if (round >= 400 && round % 4 === 0 && everyWindowRan(this.history).length === 0) break;
      for (const w of this.waiting.splice(0)) w.settle(HandlerOutcome.ack());
      this.disk.complete(Number.POSITIVE_INFINITY);
      await turn();
      // 1 s steps, then 10 s steps: starts waiting for a per-minute rate need minutes.
      if (round % 4 === 3) await this.life!.clock.advanceTo((this.now += round < 200 ? 1000 : 10_000));
    }
    await this.stop();
    return { kind: 'ran' };
  }

  private send(): void {
    const life = this.life!;
    const sub = this.random.pick(SEND_SUBS);
    const key = this.random.pick(KEYS);
    let eventId: string | undefined;
    let n: number;
    const earlier = [...this.ids.entries()].filter(([, e]) => e.sub === sub);
    if (earlier.length > 0 && this.random.chance(0.15)) {
      // A sender retries an earlier send (it may never have heard back): the same ID, the same event.
      const [id, e] = this.random.pick(earlier);
      eventId = id;
      n = e.n;
      return this.sendOne(life, sub, e.key, n, eventId);
    }
    n = ++this.n;
    if (this.random.chance(0.5)) this.ids.set((eventId = `id-${n}`), { sub, key, n });
    this.sendOne(life, sub, key, n, eventId);
  }

  private sendOne(life: Life, sub: string, key: string, n: number, eventId: string | undefined): void {
    this.history.sends.push({ life: life.n, sub, key, n, eventId });
    life.app.send(sub, { key, event: { n }, eventId }).then(
      (receipt: Receipt) => {
        if (life.dead) return;
        if (receipt.kind === 'run')
          this.history.acks.push({
            life: life.n,
            sub,
            key,
            n,
            eventId,
            runId: receipt.runId,
            duplicate: receipt.duplicate,
          });
        else this.history.drops.push({ life: life.n, sub, key, n, eventId });
      },
      () => {}, // not acknowledged: the sender does not know whether it counted
    );
  }

  private publish(): void {
    const n = ++this.n;
    const key = this.random.pick(KEYS);
    this.broker.publishNow('clicks', { n }, { key });
    this.history.published.push({ key, n });
  }

  private handle(life: number, sub: string, payload: unknown, ctx: Context): Promise<HandlerResult> {
    const events = (Array.isArray(payload) ? payload : [payload]).map((e) => (e as { n: number }).n);
    const run = ctx.run!;
    const record = {
      life,
      sub,
      runId: run.id,
      key: run.key,
      size: run.size,
      startedAt: run.startedAt,
      events,
      attempt: ctx.message.attempt,
      finished: false,
    };
    this.history.runs.push(record);
    return new Promise((resolve, reject) => {
      this.waiting.push({
        life,
        settle: (result) => {
          if (result instanceof Error) return reject(result);
          if (result === undefined || result === HandlerOutcome.ack()) record.finished = true;
          resolve(result);
        },
      });
    });
  }

  private settleOne(random = this.random): void {
    if (this.waiting.length === 0) return;
    const [w] = this.waiting.splice(random.int(this.waiting.length), 1);
    const r = random.weighted([75, 15, 10]);
    w!.settle(r === 0 ? HandlerOutcome.ack() : r === 1 ? new Error('handler failed') : HandlerOutcome.retry());
  }

  /**
   * Lets a start run until `promise` settles: the disk completes a few operations a turn, and meanwhile
   * handlers finish and the clock moves on (timers armed by the start fire), as beside a real start.
   */
  private async pump<T>(promise: Promise<T>): Promise<T> {
    const life = this.life!;
    for (let i = 0; i < 10_000 && !(await settledYet(promise)); i++) {
      this.disk.complete(1 + this.io.int(4));
      if (this.io.chance(0.3)) this.settleOne(this.io);
      if (this.io.chance(0.3)) await life.clock.advanceTo((this.now += this.io.pick([0, 0, 1, 100, 500])));
      await turn();
    }
    return promise;
  }
}
