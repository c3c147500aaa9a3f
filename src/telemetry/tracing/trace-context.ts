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

const DASH = 45;
const SPACE = 32;

/** The value of hex digit `c` (a char code), or -1 for anything but 0-9 and a-f. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/**
 * The parent a `traceparent` header names, or undefined when there is none or it is not valid: version 00
 * exactly, or a later version (but `ff`, which is invalid) that may append fields after a dash; neither the
 * trace ID nor the parent ID all zeros; one space before or after allowed. Read by char codes rather than a
 * regular expression: it is on every delivery's path.
 */
export function parseTraceparent(header: string | undefined): TraceParent | undefined {
  if (header === undefined || header.length < 55) return undefined;
  let h = header;
  if (h.charCodeAt(0) === SPACE) h = h.slice(1);
  if (h.length > 55 && h.charCodeAt(h.length - 1) === SPACE) h = h.slice(0, -1);
  if (h.length < 55 || h.charCodeAt(2) !== DASH || h.charCodeAt(35) !== DASH || h.charCodeAt(52) !== DASH)
    return undefined;
  const version = hexDigit(h.charCodeAt(0)) * 16 + hexDigit(h.charCodeAt(1));
  if (version < 0 || version === 0xff || hexDigit(h.charCodeAt(1)) < 0) return undefined;
  if (h.length > 55 && (version === 0 || h.charCodeAt(55) !== DASH)) return undefined;
  let traceBits = 0;
  let spanBits = 0;
  for (let i = 3; i < 52; i++) {
    if (i === 35) continue;
    const d = hexDigit(h.charCodeAt(i));
    if (d < 0) return undefined;
    if (i < 35) traceBits |= d;
    else spanBits |= d;
  }
  const hi = hexDigit(h.charCodeAt(53));
  const lo = hexDigit(h.charCodeAt(54));
  if (traceBits === 0 || spanBits === 0 || hi < 0 || lo < 0) return undefined;
  return { traceId: h.slice(3, 35), spanId: h.slice(36, 52), traceFlags: hi * 16 + lo };
}

/** The `traceparent` header (version 00) of a span. */
export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${(parent.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}
