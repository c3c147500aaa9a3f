import { SluiceError, show } from '../core/errors.js';
import type { Broker } from '../core/ports.js';
import { compile, type CompiledSubscriber } from '../declare/compile.js';
import type { SharedOptions } from '../declare/options.js';
import { Router } from '../declare/router.js';
import type { CompiledPace } from '../pace/config.js';
import { defaultStoreDir } from './app-options.js';

/** One broker with the subscribers mounted on it. */
export interface Mount {
  readonly broker: Broker;
  readonly subscribers: readonly CompiledSubscriber[];
}

/**
 * An app's subscribers, by broker: each compiled when it is mounted, so a bad setting throws at
 * `withBroker`, with the checks that need the whole app (one name per subscriber, one subscriber per topic
 * and group of a broker).
 */
export class Mounts {
  private readonly list: Mount[] = [];
  private readonly names = new Set<string>();
  /** The paced subscribers' compiled pace, by name. */
  readonly paces = new Map<string, CompiledPace>();

  constructor(
    private readonly app: {
      readonly name: string;
      readonly defaults: Readonly<SharedOptions> | undefined;
      readonly hasStore: boolean;
    },
  ) {}

  /** Every mount, in the order they were made. */
  get all(): readonly Mount[] {
    return this.list;
  }

  /** Every subscriber, in the order they were mounted. */
  subscribers(): readonly CompiledSubscriber[] {
    return this.list.flatMap((m) => m.subscribers);
  }

  /** Whether a subscriber is named `name`. */
  has(name: string): boolean {
    return this.names.has(name);
  }

  /** Compiles what `configure` includes and mounts it on `broker`; throws `SluiceError` for a bad setting. */
  add(broker: Broker, configure: (b: Router) => void): void {
    const router = new Router();
    configure(router);
    const { name, defaults } = this.app;
    const compiled = router
      .mounted(name)
      .map((m) => ({ s: compile(m, { name, defaults }), named: m.spec.options.name }));
    const reads = this.readsOf(broker);
    const subscribers: CompiledSubscriber[] = [];
    for (const { s: given, named } of compiled) {
      const s = named === undefined ? this.told(given) : given;
      subscribers.push(s);
      this.claimName(s.name);
      this.claimRead(reads, s);
      if (s.pace !== undefined) this.paces.set(s.name, s.pace);
    }
    // The default store's folder is the app's name: checked here, where the first paced subscriber comes.
    if (this.paces.size > 0 && !this.app.hasStore) defaultStoreDir(name);
    this.list.push({ broker, subscribers });
  }

  /** Who reads what on `broker` so far: the subscriber's name by topic and group. */
  private readsOf(broker: Broker): Map<string, string> {
    const reads = new Map<string, string>();
    for (const m of this.list) {
      if (m.broker !== broker) continue;
      for (const s of m.subscribers) reads.set(readKey(s), s.name);
    }
    return reads;
  }

  /**
   * A subscriber of a default name (its method's or handler's, or its topic) that another already has:
   * named after what it reads, `<topic>@<group>` (one subscriber per topic and group of a broker), which
   * tells apart two readers of one topic in their own groups. A name given with `name` is never changed:
   * two alike are refused, as is a derived name that is taken too.
   */
  private told(s: CompiledSubscriber): CompiledSubscriber {
    if (!this.names.has(s.name)) return s;
    const derived = `${s.topic}@${s.group}`;
    return this.names.has(derived) ? s : Object.freeze({ ...s, name: derived });
  }

  private claimName(name: string): void {
    if (this.names.has(name))
      throw new SluiceError(
        'CONFIG_INVALID',
        `App "${this.app.name}": two subscribers are named ${show(name)}; give one a name`,
      );
    this.names.add(name);
  }

  private claimRead(reads: Map<string, string>, s: CompiledSubscriber): void {
    const other = reads.get(readKey(s));
    if (other !== undefined) {
      throw new SluiceError(
        'CONFIG_INVALID',
        `App "${this.app.name}": subscribers ${show(other)} and ${show(s.name)} both read topic ${show(s.topic)} in group ${show(s.group)} and would split its messages; give one its own group`,
      );
    }
    reads.set(readKey(s), s.name);
  }
}

/** A subscriber's topic and group, as one key. */
function readKey(s: CompiledSubscriber): string {
  return `${s.topic}\u0000${s.group}`;
}
