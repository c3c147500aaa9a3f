/** What a handler may return, and the decoders that turn a message's bytes into its payload. */
import type { HandlerOutcome } from '../core/outcome.js';

/**
 * What a handler may return: a {@link HandlerOutcome}, or nothing (the same as `HandlerOutcome.ack()`).
 *
 * @category Subscribers
 */
export type HandlerResult = HandlerOutcome | void | undefined;

/**
 * Turns the message value into the payload: a function of the raw bytes (from the memory broker, a
 * `Buffer`), an object whose `parse` gets the JSON-decoded value (a zod schema fits), or any Standard Schema
 * validator ({@link StandardSchema}: valibot, arktype, zod and others), which validates the JSON-decoded
 * value. The default reads the bytes as UTF-8 JSON. A message that does not decode (bad JSON, `parse`
 * throws, the schema reports issues) is dead-lettered at once with `DECODE_FAILED: <message>`; the handler
 * is not called and there are no retries.
 *
 * @example
 * ```ts
 * subscriber('lines', (line: string) => store(line)).decode((raw) => Buffer.from(raw).toString('utf8'));
 * const Order = z.object({ id: z.string(), cents: z.number().int() });
 * subscriber('orders', bill).decode(Order);
 * ```
 *
 * @category Subscribers
 */
export type Decoder<T = unknown> =
  | ((raw: Uint8Array) => T)
  | {
      /** Checks and converts the JSON-decoded value; throws to refuse it. */
      parse(raw: unknown): T;
    }
  | StandardSchema<T>;

/**
 * A validator of the Standard Schema interface (version 1), as valibot, arktype, zod and others expose it
 * under `~standard`. Sluice calls `validate` on the JSON-decoded value: its `value` is the payload, its
 * `issues` refuse the message (`DECODE_FAILED`, naming each issue and its path). A validator that answers
 * asynchronously refuses the message too: decoding is synchronous. An object that also has `parse` is
 * called through `parse`.
 *
 * @category Subscribers
 */
export interface StandardSchema<T = unknown> {
  /** The interface's properties. */
  readonly '~standard': {
    /** The interface's version: 1. */
    readonly version: 1;
    /** The library behind it (`valibot`, `arktype`, `zod`). */
    readonly vendor: string;
    /** Validates a value: its value (the payload), or the issues that refuse it. */
    readonly validate: (value: unknown) => StandardResult<T> | Promise<StandardResult<T>>;
  };
}

/**
 * What a {@link StandardSchema}'s `validate` answers: the value, or the issues that refuse it.
 *
 * @category Subscribers
 */
export type StandardResult<T> =
  | {
      /** The validated value. */
      readonly value: T;
      /** None: the value passed. */
      readonly issues?: undefined;
    }
  | {
      /** What refuses the value. */
      readonly issues: readonly StandardIssue[];
    };

/**
 * One reason a {@link StandardSchema} refuses a value.
 *
 * @category Subscribers
 */
export interface StandardIssue {
  /** What is wrong. */
  readonly message: string;
  /** Where: the keys from the value's root, each a key or `{ key }`. */
  readonly path?: readonly (PropertyKey | StandardPathSegment)[] | undefined;
}

/**
 * A step of a {@link StandardIssue}'s path, as an object.
 *
 * @category Subscribers
 */
export interface StandardPathSegment {
  /** The key at this step. */
  readonly key: PropertyKey;
}
