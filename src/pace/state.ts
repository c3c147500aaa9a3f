/**
 * The vocabulary of a pace coordinator: its records' data, its state (a plain JSON value; only its
 * remembered IDs are changed in place, see ids.ts), and what leaves it — runs, drops and receipts. The
 * transitions are in rules.ts.
 */

/** Record types of a pace coordinator (besides the core's `timer`). */
export const EVENT = 'event';
export const DONE = 'done';

/**
 * An `event` record's data: the event; its ID if the sender gave one, or for a broker delivery its source
 * (`topic/partition`) and offset; the run ID's UUID should it open a window (or be a run of its own); and
 * its order, when the subscriber has `pace.order` (a function, so its number is journaled instead).
 */
export interface EventData {
  readonly e: unknown;
  readonly id?: string;
  readonly src?: string;
  readonly off?: number;
  readonly r: string;
  readonly o?: number;
}

/**
 * A start that is gathered, waits or runs: its run ID, its events (debounce: the latest), how many starts it took, its
 * order.
 */
export interface Start {
  readonly id: string;
  readonly events: readonly unknown[];
  readonly size: number;
  /** Its order (`pace.order`); left out for 0 or no order. */
  readonly o?: number;
}

/** An open window: a start being gathered. */
export interface Window extends Start {
  /** When the first start arrived. */
  readonly first: number;
  /** When the window closes. */
  readonly due: number;
}

/** A run that started (left the coordinator) at `at`. */
export interface Started extends Start {
  readonly at: number;
}

/** A coordinator's state. */
export interface PaceState {
  /** The open window. */
  readonly w?: Window;
  /** Starts that wait for the rate (`perMinute`): highest order first, then in the order they came. */
  readonly q?: readonly Start[];
  /** Runs that started and have not finished: handed out again after a restart. */
  readonly runs?: readonly Started[];
  /** When the last runs started (at most the rate's `max` of them, oldest first), while within its period. */
  readonly starts?: readonly number[];
  /**
   * Remembered event IDs, with the run each joined (`''`: the start was dropped): a null-prototype object,
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
  /** Written by earlier versions: when every remembered ID and offset was forgotten at once. Read, never written. */
  readonly idsUntil?: number;
}

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
  /** The run ID, `<key>@<uuid>`: fixed when its window's first start arrived, and in every receipt of it. */
  readonly id: string;
  /**
   * The events it carries, as JSON gives them back: the latest start's (debounce), every one in arrival order (batch),
   * or the start's own.
   */
  readonly events: readonly unknown[];
  /** How many starts it carries (for `debounce`, how many it collapsed). */
  readonly size: number;
  /** When it left its coordinator, in milliseconds since the epoch: its window closed and its rate let it start. */
  readonly startedAt: number;
  /** Its order among waiting runs (`pace.order`), 0 without one. */
  readonly order: number;
}

/** A start dropped by `pace.drop`, for the log. */
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
 * What `app.send` resolves with for a start that joined a run.
 *
 * @category Pace
 */
export interface PaceReceipt {
  /** The run the start joined, `<key>@<uuid>`: its handler sees it as `ctx.run.id`, on every attempt. */
  readonly runId: string;
  /** True when the key had seen this `eventId` within `dedup`: the first receipt again, and nothing added. */
  readonly duplicate: boolean;
}

/** What a start is answered: the run it joined, or that it was dropped. */
export type PaceReply = PaceReceipt | { readonly dropped: true };

const SEP = '\u0000';

/** A coordinator's key in the shard: the subscriber's name and the user's key. */
export const coordinatorKey = (subscriber: string, key: string): string => subscriber + SEP + key;

/** The subscriber's name and the user's key of a coordinator's key. */
export function splitKey(key: string): [string, string] {
  const at = key.indexOf(SEP);
  return at < 0 ? ['', key] : [key.slice(0, at), key.slice(at + 1)];
}

/** A started run as its subscriber's dispatch gets it. */
export const runOf = (subscriber: string, key: string, r: Started): PaceRun => ({
  subscriber,
  key,
  id: r.id,
  events: r.events,
  size: r.size,
  startedAt: r.at,
  order: r.o ?? 0,
});
