/**
 * The W3C Trace Context headers (https://www.w3.org/TR/trace-context/), read and written by hand: what tracing
 * uses when no propagator is registered with the OpenTelemetry API (its W3C propagator lives in
 * `@opentelemetry/core`, which Sluice does not depend on). `traceparent` is
 * `<version>-<trace-id>-<parent-id>-<flags>`: 2, 32, 16 and 2 lower-case hex digits.
 */

/** The header of a message's trace parent. */
export const TRACEPARENT = 'traceparent';
/** The header of the vendors' trace state that goes with it. */
export const TRACESTATE = 'tracestate';

/** What a `traceparent` names: the trace, the span that is the parent, and the trace flags (bit 0: sampled). */
export interface TraceParent {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
}

/**
 * Version 00 exactly, or a later version (but `ff`, which is invalid) that may append fields after a dash. An
 * all-zero trace ID or parent ID is invalid.
 */
const PARENT = /^\s?([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})(-.*)?\s?$/;
const ZEROS = /^0+$/;

/** The parent a `traceparent` header names, or undefined when there is none or it is not valid. */
export function parseTraceparent(header: string | undefined): TraceParent | undefined {
  if (header === undefined) return undefined;
  const m = PARENT.exec(header);
  if (m === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string?];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (ZEROS.test(traceId) || ZEROS.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: parseInt(flags, 16) };
}

/** The `traceparent` header (version 00) of a span. */
export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${(parent.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}
