/**
 * The vocabulary of a pace coordinator, named plainly: the events appended to it, its state in memory (an
 * explicit stage, and what it holds in any stage), and what leaves it — runs, drops and receipts. The
 * transitions are in rules.ts; the compact form the journal and snapshots keep is codec.ts's alone.
 */

/** Record types of a pace coordinator (besides the core's `timer`). */
export const EVENT = 'event';
export const DONE = 'done';
/** Pauses a subscriber in the shard (a record of its pause coordinator, see {@link pauseKey}). */
export const PAUSE = 'pause';
/** Ends a subscriber's pause in the shard. */
export const RESUME = 'resume';
/** Cancels a key's open window or waiting run: data, the run ID. */
export const CANCEL = 'cancel';
/** Starts up to `data` (a number) of the key's waiting runs, as far as its rate lets: a resume's wake of the key. */
export const RELEASE = 'release';

/**
 * An event appended to a coordinator, as the rules read it (codec.ts reads it from an `event` record): the
 * event; its ID if the sender gave one, or for a broker delivery its source and offset; the UUID of the run
 * it opens, should it open one; and its order (`pace.order`, asked once when it was appended).
 */
export interface PaceEvent {
  readonly event: unknown;
  readonly eventId?: string;
  /** A broker delivery's `topic/partition` and offset. */
  readonly source?: { readonly partition: string; readonly offset: number };
  /** Minted for every event by the sender's side; the rules use it only when the event opens a run. */
  readonly runUuid: string;
  /** 0 when the subscriber has no `pace.order`. */
  readonly order: number;
  /**
   * When the event happened, where that is earlier than its record's time: a broker delivery read by a shard
   * catching up after a failover counts at the time the broker appended it. Windows gather by it; rates,
   * IDs and timers go by the record's time.
   */
  readonly time?: number;
}

/**
 * A run not finished: its ID, its events (debounce: the latest), how many events it took, its order. In a
 * window it is gathered, in `waiting` it waits for its rate, in `running` it has started.
 */
export interface PendingRun {
  /** `<key>@<uuid>`: fixed when its first event arrived, and in every receipt of it. */
  readonly runId: string;
  readonly events: readonly unknown[];
  readonly size: number;
  /** Its order (`pace.order`), 0 without one. */
  readonly order: number;
}

/** The run being gathered (`debounce`, `batch`) while its window is open. */
export interface OpenWindow extends PendingRun {
  /** When its first event arrived. */
  readonly openedAt: number;
  /** When it closes. */
  readonly closesAt: number;
}

/** A run that started (left the coordinator for its subscriber's dispatch) and has not finished. */
export interface StartedRun extends PendingRun {
  readonly startedAt: number;
}

/** The event IDs and broker offsets a coordinator remembers (`dedup`), in memory and in the journal alike. */
export interface Remembered {
  /**
   * Remembered event IDs, with the run each joined (`''`: the event was dropped): a null-prototype object,
   * so an ID named like a property of Object.prototype (`constructor`, `__proto__`) is an ID like any other.
   * Changed in place (see ids.ts): copying it on every event made a busy key's events cost O(IDs).
   */
  readonly ids?: Readonly<Record<string, string>>;
  /** The remembered IDs in arrival order, from `idHead` on (entries before it were forgotten). */
  readonly idOrder?: readonly string[];
  /** When each of `idOrder` is forgotten: its arrival plus `dedup`. */
  readonly idUntil?: readonly number[];
  /** Where the remembered IDs start in `idOrder` and `idUntil`. */
  readonly idHead?: number;
  /**
   * For broker deliveries, the highest offset seen per `topic/partition` (a null-prototype object): a
   * partition delivers a key's messages in offset order, so a redelivery is any offset not past it. One
   * number per partition instead of one ID per message.
   */
  readonly seen?: Readonly<Record<string, number>>;
  /** When the offsets in `seen` are forgotten (the last broker delivery's arrival plus `dedup`). */
  readonly seenUntil?: number;
}

/** What a coordinator holds in either stage. */
export interface Held extends Remembered {
  /** Runs that wait for the rate (`perMinute`): highest order first, then in the order they came. */
  readonly waiting: readonly PendingRun[];
  /** Runs that started and have not finished: handed out again after a restart. */
  readonly running: readonly StartedRun[];
  /** When the last runs started (at most the rate's `max` of them, oldest first), while within its period. */
  readonly history: readonly number[];
  /**
   * Set only in a subscriber's pause coordinator (see {@link pauseKey}), while the subscriber is paused in
   * the shard: its keys' runs wait, and none starts.
   */
  readonly paused?: true;
}

/** No window is open: the next event that makes a run opens one (or is a run by itself). */
export interface Quiet extends Held {
  readonly stage: 'quiet';
}

/** A window is open: events join its run until it closes. */
export interface Gathering extends Held {
  readonly stage: 'gathering';
  readonly window: OpenWindow;
}

/** A coordinator's state: its stage, tagged, and what it holds. */
export type PaceState = Quiet | Gathering;

/** The state of a key with no history. */
export const QUIET: Quiet = { stage: 'quiet', waiting: [], running: [], history: [] };

/**
 * A run leaving a coordinator, for the subscriber's dispatch: what its handler's payload and `ctx.run` are made of.
 *
 * @category Pace
 */
export interface PaceRun {
  /** The paced subscriber's name. */
  readonly subscriber: string;
  /** The key whose coordinator made the run. */
  readonly key: string;
  /** The run ID, `<key>@<uuid>`: fixed when its window's first event arrived, and in every receipt of it. */
  readonly id: string;
  /**
   * The events it carries, as JSON gives them back: the latest event's (debounce), every one in arrival order (batch),
   * or the event's own.
   */
  readonly events: readonly unknown[];
  /** How many events it carries (for `debounce`, how many it collapsed). */
  readonly size: number;
  /** When it left its coordinator, in milliseconds since the epoch: its window closed and its rate let it start. */
  readonly startedAt: number;
  /** Its order among waiting runs (`pace.order`), 0 without one. */
  readonly order: number;
}

/** An event dropped by `pace.drop`, for the log. */
export interface PaceDrop {
  readonly subscriber: string;
  readonly key: string;
  readonly dropped: true;
  readonly at: number;
  readonly eventId?: string;
}

/** What leaves a coordinator once its record is durable. */
export type PaceOutput = PaceRun | PaceDrop;

/**
 * What `app.send` resolves with once the event is durable: `kind: 'run'`, the run it joined (its ID is
 * fixed before the run exists), or `kind: 'dropped'`, when `pace.drop` dropped it (no run is made for it).
 *
 * @category App
 */
export type Receipt =
  | PaceReceipt
  | {
      /** The event was over the subscriber's `pace.drop` rate: it was logged and makes no run. */
      readonly kind: 'dropped';
      /** Always true: `receipt.dropped` tells a dropped start from a run without reading `kind`. */
      readonly dropped: true;
    };

/**
 * The {@link Receipt} of an event that joined a run.
 *
 * @category Pace
 */
export interface PaceReceipt {
  /** The event joined a run. */
  readonly kind: 'run';
  /** The run the event joined, `<key>@<uuid>`: its handler sees it as `ctx.run.id`, on every attempt. */
  readonly runId: string;
  /** True when the key had seen this `eventId` within `dedup`: the first receipt again, and nothing added. */
  readonly duplicate: boolean;
}

/**
 * What an event is answered.
 *
 * @deprecated Use {@link Receipt}.
 */
export type PaceReply = Receipt;

const SEP = '\u0000';

/** A coordinator's key in the shard: the subscriber's name and the user's key. */
export const coordinatorKey = (subscriber: string, key: string): string => subscriber + SEP + key;

/**
 * The key of a subscriber's pause coordinator in a shard: apart from every user's key, since its subscriber
 * part is empty (no subscriber is named `''`). Its state says whether the subscriber is paused there.
 */
export const pauseKey = (subscriber: string): string => SEP + subscriber;

/** The subscriber's name and the user's key of a coordinator's key. */
export function splitKey(key: string): [string, string] {
  const at = key.indexOf(SEP);
  return at < 0 ? ['', key] : [key.slice(0, at), key.slice(at + 1)];
}

/** The subscriber's name of a coordinator's key (without the user's key, which it does not copy). */
export function subscriberOf(key: string): string {
  const at = key.indexOf(SEP);
  return at < 0 ? '' : key.slice(0, at);
}

/** A started run as its subscriber's dispatch gets it. */
export const runOf = (subscriber: string, key: string, r: StartedRun): PaceRun => ({
  subscriber,
  key,
  id: r.runId,
  events: r.events,
  size: r.size,
  startedAt: r.startedAt,
  order: r.order,
});
