import type { MessageInfo, PublishOptions } from './message.js';
import type { Logger } from './ports.js';

/** A paced run, as a handler of a paced subscriber sees it: `ctx.run`. */
export interface RunInfo {
  /** `<key>@<uuid>`, fixed when the window opened. */
  readonly id: string;
  readonly key: string;
  /** How many events the run carries. */
  readonly size: number;
  /** When the run started (ms since the epoch): its window closed and its rate let it go. Fixed across retries and restarts. */
  readonly startedAt: number;
}

/** What a handler gets besides its payload. */
export interface Context {
  /** The message being handled (for a batch handler: the first of the batch). */
  readonly message: MessageInfo;
  /** For a batch handler: every message of the batch, in order. */
  readonly messages: readonly MessageInfo[];
  /** The run, for paced subscribers. */
  readonly run: RunInfo | undefined;
  /** Aborted when the handler's time runs out: its timeout, or shutdown's. */
  readonly signal: AbortSignal;
  /** The app's logger, bound to the subscriber. */
  readonly log: Logger;
  /** Publishes on the subscriber's broker. */
  publish(topic: string, value: unknown, options?: PublishOptions): Promise<void>;
}
