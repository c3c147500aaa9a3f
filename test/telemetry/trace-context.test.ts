/** The W3C `traceparent` header, read and written by hand where no propagator is registered. */
import { describe, expect, it } from 'vitest';
import { formatTraceparent, parseTraceparent } from '../../src/telemetry/tracing/trace-context.js';

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const S = '00f067aa0ba902b7';

describe('traceparent', () => {
  it('reads version 00, the sampled flag and a later version with more fields', () => {
    expect(parseTraceparent(`00-${T}-${S}-01`)).toEqual({ traceId: T, spanId: S, traceFlags: 1 });
    expect(parseTraceparent(`00-${T}-${S}-00`)).toEqual({ traceId: T, spanId: S, traceFlags: 0 });
    expect(parseTraceparent(`01-${T}-${S}-03-later`)).toEqual({ traceId: T, spanId: S, traceFlags: 3 });
    expect(parseTraceparent(` 00-${T}-${S}-01 `)).toEqual({ traceId: T, spanId: S, traceFlags: 1 });
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['version ff', `ff-${T}-${S}-01`],
    ['version 00 with more fields', `00-${T}-${S}-01-x`],
    ['an all-zero trace ID', `00-${'0'.repeat(32)}-${S}-01`],
    ['an all-zero parent ID', `00-${T}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${T.toUpperCase()}-${S}-01`],
    ['a short trace ID', `00-${T.slice(1)}-${S}-01`],
    ['no flags', `00-${T}-${S}`],
    ['a later version run on without a dash', `01-${T}-${S}-03x`],
    ['a bad version digit', `0g-${T}-${S}-01`],
    ['a bad flags digit', `00-${T}-${S}-0z`],
    ['a dash out of place', `00-${T}${S}--01`],
  ])('refuses %s', (_what, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });

  it('writes version 00 with two hex digits of flags', () => {
    expect(formatTraceparent({ traceId: T, spanId: S, traceFlags: 1 })).toBe(`00-${T}-${S}-01`);
    expect(formatTraceparent({ traceId: T, spanId: S, traceFlags: 0 })).toBe(`00-${T}-${S}-00`);
    expect(formatTraceparent({ traceId: T, spanId: S, traceFlags: 0x1ff })).toBe(`00-${T}-${S}-ff`);
  });
});
