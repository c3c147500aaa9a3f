import { describe, expect, it } from 'vitest';
import { ERROR_CODES, HandlerOutcome, SluiceError, parseDuration } from '../../src/index.js';

describe('SluiceError', () => {
  it('carries its own code and cause', () => {
    for (const code of ERROR_CODES) {
      const cause = new Error('root');
      const e = new SluiceError(code, 'msg', { cause });
      expect(e).toBeInstanceOf(Error);
      expect(e.code).toBe(code);
      expect(e.cause).toBe(cause);
      expect(e.name).toBe('SluiceError');
    }
  });

  it('has every documented error code', () => {
    for (const code of [
      'WORKERS_INVALID',
      'CONFIG_INVALID',
      'PACE_UNKNOWN_PART',
      'PACE_BAD_DURATION',
      'UNKNOWN_SUBSCRIBER',
      'DECODE_FAILED',
      'STORE_CORRUPT',
    ]) {
      expect(ERROR_CODES).toContain(code);
    }
  });
});

describe('HandlerOutcome', () => {
  it('is ack, retry or reject', () => {
    expect(HandlerOutcome.ack().kind).toBe('ack');
    expect(HandlerOutcome.retry({ delayMs: 5 })).toMatchObject({ kind: 'retry', delayMs: 5 });
    expect(HandlerOutcome.reject('bad')).toMatchObject({ kind: 'reject', reason: 'bad' });
    expect(() => HandlerOutcome.retry({ delayMs: -1 })).toThrow(/delayMs/);
  });
});

describe('parseDuration', () => {
  it.each([
    [500, 500],
    ['500 ms', 500],
    ['10s', 10_000],
    ['30 seconds', 30_000],
    ['2 minutes', 120_000],
    ['1 hour', 3_600_000],
    ['1 day', 86_400_000],
    ['1.5s', 1_500],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseDuration(text, 'x')).toBe(ms);
  });

  it.each(['', 'soon', '10 parsecs', '-5s', '1e3 ms', NaN, -1, Infinity, {}, '5'])(
    'refuses %s with PACE_BAD_DURATION',
    (text) => {
      expect(() => parseDuration(text, 'pace.debounce')).toThrow(
        expect.objectContaining({ code: 'PACE_BAD_DURATION', message: expect.stringContaining('pace.debounce') }),
      );
    },
  );
});
