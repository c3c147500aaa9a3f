import { describe, expect, it } from 'vitest';
import type { SubscriberOptions } from '../../src/index.js';
import { checkName } from '../../src/declare/checks.js';
import { MAX_WORKERS, parseDefaults, parseOptions, parseRouterOptions } from '../../src/declare/parse.js';
import type { PaceOptions } from '../../src/declare/options.js';
import {
  DEFAULT_BATCH_WAIT_MS,
  DEFAULT_DEDUP_MS,
  MAX_BATCH,
  MINUTE_MS,
  parsePace,
  type CompiledPace,
} from '../../src/declare/pace.js';
import { expectError } from '../expect-error.js';

// Every setting a subscriber or router takes, refused and accepted at its edges, with the whole message a
// user reads: `<who>: <field> must be <expected>, got <value>` (docs/subscribers.md).
const WHO = 'subscriber "bill"';
const check = (options: unknown) => () => parseOptions(options as SubscriberOptions, WHO);
const DURATION = "is not a duration (milliseconds, or text such as '500 ms', '10s', '2 minutes', '1 hour')";
const OPTIONS =
  'name, workers, byKey, key, group, decode, batch, retry, deadLetter, pace, timeoutMs, use, publishTo, replies, exactlyOnce';
const PARTS = 'debounce, batch, perMinute, drop, order, turns, dedup';

describe('parseOptions', () => {
  it.each<[string, unknown, string, string]>([
    ['not an object', null, 'CONFIG_INVALID', 'options must be an object, got null'],
    ['an array', [1], 'CONFIG_INVALID', 'options must be an object, got [1]'],
    ['text', 'fast', 'CONFIG_INVALID', 'options must be an object, got "fast"'],
    ['an unknown setting', { wokers: 2 }, 'CONFIG_INVALID', `wokers must be a known setting (${OPTIONS}), got 2`],
    ['a blank name', { name: '  ' }, 'CONFIG_INVALID', 'name must be a non-empty string without NUL, got "  "'],
    [
      'a name with NUL',
      { name: 'a\u0000b' },
      'CONFIG_INVALID',
      'name must be a non-empty string without NUL, got "a\\u0000b"',
    ],
    ['a name not text', { name: 7 }, 'CONFIG_INVALID', 'name must be a non-empty string without NUL, got 7'],
    ['no workers', { workers: 0 }, 'WORKERS_INVALID', 'workers must be a positive integer, got 0'],
    ['fractional workers', { workers: 1.5 }, 'WORKERS_INVALID', 'workers must be a positive integer, got 1.5'],
    ['workers as text', { workers: '2' }, 'WORKERS_INVALID', 'workers must be a positive integer, got "2"'],
    [
      'one worker too many',
      { workers: MAX_WORKERS + 1 },
      'WORKERS_INVALID',
      `workers must be at most ${MAX_WORKERS}, got ${MAX_WORKERS + 1}`,
    ],
    ['byKey not a boolean', { byKey: 'yes' }, 'CONFIG_INVALID', 'byKey must be true or false, got "yes"'],
    [
      'key not a function',
      { key: 'id' },
      'CONFIG_INVALID',
      'key must be a function (message) => string | undefined, got "id"',
    ],
    ['an empty group', { group: '' }, 'CONFIG_INVALID', 'group must be a non-empty string without NUL, got ""'],
    [
      'a group with NUL',
      { group: 'g\u0000' },
      'CONFIG_INVALID',
      'group must be a non-empty string without NUL, got "g\\u0000"',
    ],
    ['a group not text', { group: 5 }, 'CONFIG_INVALID', 'group must be a non-empty string without NUL, got 5'],
    [
      'decode a number',
      { decode: 42 },
      'CONFIG_INVALID',
      'decode must be a function, an object with parse(), or a Standard Schema, got 42',
    ],
    [
      'decode null',
      { decode: null },
      'CONFIG_INVALID',
      'decode must be a function, an object with parse(), or a Standard Schema, got null',
    ],
    [
      'decode without parse()',
      { decode: { parse: 'json' } },
      'CONFIG_INVALID',
      'decode must be a function, an object with parse(), or a Standard Schema, got {"parse":"json"}',
    ],
    ['batch an array', { batch: [5] }, 'CONFIG_INVALID', 'batch must be an object { max }, got [5]'],
    ['batch without max', { batch: {} }, 'CONFIG_INVALID', 'batch.max must be a positive integer, got undefined'],
    ['batch.max 0', { batch: { max: 0 } }, 'CONFIG_INVALID', 'batch.max must be a positive integer, got 0'],
    [
      'an unknown field of batch',
      { batch: { max: 2, size: 1 } },
      'CONFIG_INVALID',
      'batch.size must be a known field of batch (max), got 1',
    ],
    ['retry a number', { retry: 3 }, 'CONFIG_INVALID', 'retry must be an object { attempts?, backoff? }, got 3'],
    [
      'retry.attempts 0',
      { retry: { attempts: 0 } },
      'CONFIG_INVALID',
      'retry.attempts must be a positive integer, got 0',
    ],
    [
      'retry.backoff an array',
      { retry: { backoff: [] } },
      'CONFIG_INVALID',
      'retry.backoff must be an object { initialMs?, maxMs? }, got []',
    ],
    [
      'a negative initialMs',
      { retry: { backoff: { initialMs: -1 } } },
      'CONFIG_INVALID',
      'retry.backoff.initialMs must be a finite number >= 0, got -1',
    ],
    [
      'initialMs not a number',
      { retry: { backoff: { initialMs: '5' } } },
      'CONFIG_INVALID',
      'retry.backoff.initialMs must be a finite number >= 0, got "5"',
    ],
    [
      'an endless maxMs',
      { retry: { backoff: { maxMs: Number.POSITIVE_INFINITY } } },
      'CONFIG_INVALID',
      'retry.backoff.maxMs must be a finite number >= 0, got Infinity',
    ],
    [
      'a NaN maxMs',
      { retry: { backoff: { maxMs: Number.NaN } } },
      'CONFIG_INVALID',
      'retry.backoff.maxMs must be a finite number >= 0, got NaN',
    ],
    [
      'maxMs below initialMs',
      { retry: { backoff: { initialMs: 100, maxMs: 99 } } },
      'CONFIG_INVALID',
      'retry.backoff.maxMs must be at least initialMs (100), got 99',
    ],
    [
      'an unknown field of retry.backoff',
      { retry: { backoff: { factor: 2 } } },
      'CONFIG_INVALID',
      'retry.backoff.factor must be a known field of retry.backoff (initialMs, maxMs), got 2',
    ],
    ['an empty deadLetter', { deadLetter: '' }, 'CONFIG_INVALID', 'deadLetter must be a topic name or false, got ""'],
    ['deadLetter true', { deadLetter: true }, 'CONFIG_INVALID', 'deadLetter must be a topic name or false, got true'],
    ['deadLetter a number', { deadLetter: 1 }, 'CONFIG_INVALID', 'deadLetter must be a topic name or false, got 1'],
    ['timeoutMs 0', { timeoutMs: 0 }, 'CONFIG_INVALID', 'timeoutMs must be a positive number of milliseconds, got 0'],
    [
      'an endless timeoutMs',
      { timeoutMs: Number.POSITIVE_INFINITY },
      'CONFIG_INVALID',
      'timeoutMs must be a positive number of milliseconds, got Infinity',
    ],
    [
      'timeoutMs as text',
      { timeoutMs: '5' },
      'CONFIG_INVALID',
      'timeoutMs must be a positive number of milliseconds, got "5"',
    ],
    [
      'batch with byKey',
      { byKey: true, batch: { max: 10 } },
      'CONFIG_INVALID',
      'batch must be left out when byKey is set (a batch spans keys; use pace.batch for per-key batches), got {"max":10}',
    ],
    ['pace null', { pace: null }, 'CONFIG_INVALID', 'pace must be an object, got null'],
    ['pace an array', { pace: [] }, 'CONFIG_INVALID', 'pace must be an object, got []'],
    ['pace text', { pace: '1s' }, 'CONFIG_INVALID', 'pace must be an object, got "1s"'],
    [
      'an unknown pace part',
      { pace: { debounse: '1s' } },
      'PACE_UNKNOWN_PART',
      `pace.debounse must be a pace part (${PARTS}), got "1s"`,
    ],
    [
      'a debounce that is no duration',
      { pace: { debounce: 'soon' } },
      'PACE_BAD_DURATION',
      `pace.debounce: "soon" ${DURATION}`,
    ],
    ['a null debounce', { pace: { debounce: null } }, 'PACE_BAD_DURATION', `pace.debounce: null ${DURATION}`],
    [
      'a debounce window that is no duration',
      { pace: { debounce: { window: 'soon' } } },
      'PACE_BAD_DURATION',
      `pace.debounce.window: "soon" ${DURATION}`,
    ],
    [
      'a debounce maxWait that is no duration',
      { pace: { debounce: { window: '1s', maxWait: 'later' } } },
      'PACE_BAD_DURATION',
      `pace.debounce.maxWait: "later" ${DURATION}`,
    ],
    [
      'an unknown field of pace.debounce',
      { pace: { debounce: { window: '1s', max: 2 } } },
      'CONFIG_INVALID',
      'pace.debounce.max must be a known field of pace.debounce (window, maxWait), got 2',
    ],
    [
      'pace.debounce an array',
      { pace: { debounce: ['1s'] } },
      'CONFIG_INVALID',
      'pace.debounce must be an object { window, maxWait? } or a duration, got ["1s"]',
    ],
    [
      'pace.batch a number',
      { pace: { batch: 5 } },
      'CONFIG_INVALID',
      'pace.batch must be an object { max?, wait? }, got 5',
    ],
    [
      'pace.batch.max 0',
      { pace: { batch: { max: 0 } } },
      'CONFIG_INVALID',
      'pace.batch.max must be a positive integer, got 0',
    ],
    [
      'a batch wait that is no duration',
      { pace: { batch: { wait: 'x' } } },
      'PACE_BAD_DURATION',
      `pace.batch.wait: "x" ${DURATION}`,
    ],
    ['perMinute 0', { pace: { perMinute: 0 } }, 'CONFIG_INVALID', 'pace.perMinute must be a positive integer, got 0'],
    [
      'perMinute as text',
      { pace: { perMinute: '2' } },
      'CONFIG_INVALID',
      'pace.perMinute must be a positive integer, got "2"',
    ],
    [
      'pace.drop text',
      { pace: { drop: '1/s' } },
      'CONFIG_INVALID',
      'pace.drop must be an object { max, per }, got "1/s"',
    ],
    [
      'pace.drop.max 0',
      { pace: { drop: { max: 0, per: '1s' } } },
      'CONFIG_INVALID',
      'pace.drop.max must be a positive integer, got 0',
    ],
    ['a drop without per', { pace: { drop: { max: 1 } } }, 'PACE_BAD_DURATION', `pace.drop.per: undefined ${DURATION}`],
    ['an order not a function', { pace: { order: 3 } }, 'CONFIG_INVALID', 'pace.order must be a function, got 3'],
    [
      'turns other than key',
      { pace: { turns: 'caller' } },
      'CONFIG_INVALID',
      'pace.turns must be \'key\', got "caller"',
    ],
    ['a dedup that is no duration', { pace: { dedup: 'ever' } }, 'PACE_BAD_DURATION', `pace.dedup: "ever" ${DURATION}`],
  ])('refuses %s, naming the owner, the field and the value', (_name, options, code, message) => {
    expect(expectError(check(options), code)).toBe(`${WHO}: ${message}`);
  });

  const fn = () => 'k';
  const order = () => 1;
  it.each<[string, SubscriberOptions]>([
    ['nothing', {}],
    ['the edges of workers', { name: 'n', workers: 1 }],
    ['the most workers', { workers: MAX_WORKERS, byKey: true }],
    ['byKey false, a key, a group', { byKey: false, key: fn, group: 'g' }],
    ['a decode function', { decode: fn }],
    ['a decoder with parse()', { decode: { parse: fn } }],
    ['the smallest batch', { batch: { max: 1 } }],
    ['retry without backoff', { retry: { attempts: 1 } }],
    ['a zero backoff', { retry: { backoff: { initialMs: 0, maxMs: 0 } } }],
    ['maxMs equal to initialMs', { retry: { backoff: { initialMs: 5, maxMs: 5 } } }],
    ['maxMs alone, below the default initialMs', { retry: { backoff: { maxMs: 1 } } }],
    ['no dead letters', { deadLetter: false }],
    ['a dead-letter topic', { deadLetter: 'orders.dlq' }],
    ['a fractional timeout', { timeoutMs: 0.5 }],
    ['empty pace', { pace: {} }],
    ['debounce as text', { pace: { debounce: '1s', dedup: '1 minute' } }],
    ['debounce in milliseconds', { pace: { debounce: 500 } }],
    ['debounce with a window alone', { pace: { debounce: { window: '1s' } } }],
    ['debounce with a maxWait', { pace: { debounce: { window: '1s', maxWait: '2s' } } }],
    ['pace.batch empty', { pace: { batch: {} } }],
    [
      'pace.batch with both fields, byKey',
      { byKey: true, pace: { batch: { max: 1, wait: '1s' }, perMinute: 1, order, turns: 'key' } },
    ],
    ['drop', { pace: { drop: { max: 1, per: '1s' } } }],
  ])('accepts %s, and returns it copied and frozen at every level', (_name, options) => {
    const copy = parseOptions(options, WHO).options;
    expect(copy).toStrictEqual(options);
    expect(copy).not.toBe(options);
    const nested = [
      copy,
      copy.batch,
      copy.retry,
      copy.retry?.backoff,
      copy.pace,
      copy.pace?.batch,
      copy.pace?.drop,
      typeof copy.pace?.debounce === 'object' ? copy.pace.debounce : undefined,
    ];
    for (const o of nested) if (o !== undefined) expect(Object.isFrozen(o)).toBe(true);
    for (const [o, c] of [
      [options.batch, copy.batch],
      [options.retry, copy.retry],
      [options.retry?.backoff, copy.retry?.backoff],
      [options.pace, copy.pace],
      [options.pace?.batch, copy.pace?.batch],
      [options.pace?.drop, copy.pace?.drop],
    ] as const) {
      if (o !== undefined) expect(c).not.toBe(o);
    }
    if (typeof options.pace?.debounce === 'object') expect(copy.pace!.debounce).not.toBe(options.pace.debounce);
  });

  it('reports the first bad setting, in the documented order of checks', () => {
    expect(expectError(check({ workers: 0, byKey: 'x', timeoutMs: 0 }), 'WORKERS_INVALID')).toBe(
      `${WHO}: workers must be a positive integer, got 0`,
    );
    expect(expectError(check({ wokers: 1, workers: 0 }), 'CONFIG_INVALID')).toMatch(/wokers must be a known setting/);
  });
});

describe('parseDefaults', () => {
  const who = 'App "shop" defaults';
  it.each<[string, unknown, string]>([
    ['null', null, `${who} must be an object, got null`],
    ['an array', [], `${who} must be an object, got []`],
    ['a number', 3, `${who} must be an object, got 3`],
    [
      'a setting a router cannot give',
      { key: () => 'k' },
      `${who}: key must be a setting given as a default (workers, byKey, group, retry, deadLetter, timeoutMs, decode), got function key`,
    ],
    [
      'a bad setting of those it can give',
      { timeoutMs: -1 },
      `${who}: timeoutMs must be a positive number of milliseconds, got -1`,
    ],
  ])('refuses %s', (_name, defaults, message) => {
    expect(expectError(() => parseDefaults(defaults, who), 'CONFIG_INVALID')).toBe(message);
  });

  it('accepts the settings a router may give, copied and frozen', () => {
    const defaults = {
      workers: 2,
      byKey: true,
      group: 'g',
      retry: { attempts: 2, backoff: { initialMs: 1 } },
      deadLetter: false as const,
      timeoutMs: 10,
      decode: (b: Uint8Array) => b,
    };
    const copy = parseDefaults(defaults, who);
    expect(copy).toStrictEqual(defaults);
    expect(Object.isFrozen(copy.retry!.backoff)).toBe(true);
  });
});

describe('parseRouterOptions', () => {
  const ROUTER = 'workers, byKey, group, retry, deadLetter, timeoutMs, decode';
  it.each<[string, unknown, string, string]>([
    ['a prefix not text', { prefix: null }, 'CONFIG_INVALID', 'router: prefix must be a string, got null'],
    [
      'a subscriber setting, naming the router by its prefix',
      { prefix: 'eu.', key: () => 'k' },
      'CONFIG_INVALID',
      `router "eu.": key is not a router setting (prefix, use, ${ROUTER}), got function key`,
    ],
    [
      'a subscriber setting of a router without prefix',
      { name: 'x' },
      'CONFIG_INVALID',
      `router: name is not a router setting (prefix, use, ${ROUTER}), got "x"`,
    ],
    [
      'a bad default, under an empty prefix',
      { prefix: '', workers: 0 },
      'WORKERS_INVALID',
      'router: workers must be a positive integer, got 0',
    ],
  ])('refuses %s', (_name, options, code, message) => {
    expect(expectError(() => parseRouterOptions(options as never), code)).toBe(message);
  });

  it.each<[string, unknown, object]>([
    ['no options', undefined, {}],
    ['a prefix alone', { prefix: 'eu.' }, { prefix: 'eu.' }],
    ['an empty prefix', { prefix: '' }, { prefix: '' }],
    ['defaults without a prefix', { workers: 2 }, { workers: 2 }],
    [
      'a prefix and defaults',
      { prefix: 'eu.', retry: { attempts: 2 }, deadLetter: false },
      { retry: { attempts: 2 }, deadLetter: false, prefix: 'eu.' },
    ],
  ])('accepts %s, copied and frozen', (_name, options, expected) => {
    const copy = parseRouterOptions(options as never);
    expect(copy).toStrictEqual(expected);
    expect(Object.isFrozen(copy)).toBe(true);
    if (copy.retry !== undefined) expect(Object.isFrozen(copy.retry)).toBe(true);
  });
});

describe('checkName', () => {
  it('takes a name with text, and refuses a blank one, one with NUL, or one that is not text', () => {
    expect(() => checkName(WHO, 'Billing.bill')).not.toThrow();
    expect(() => checkName(WHO, ' x ')).not.toThrow();
    expect(expectError(() => checkName(WHO, ''), 'CONFIG_INVALID')).toBe(
      `${WHO}: name must be a non-empty string without NUL, got ""`,
    );
    expect(expectError(() => checkName(WHO, '\t'), 'CONFIG_INVALID')).toBe(
      `${WHO}: name must be a non-empty string without NUL, got "\\t"`,
    );
    expect(expectError(() => checkName(WHO, undefined), 'CONFIG_INVALID')).toBe(
      `${WHO}: name must be a non-empty string without NUL, got undefined`,
    );
  });
});

describe('parsePace', () => {
  const pace = (raw: unknown) => () => parsePace(raw, WHO);
  it.each<[string, unknown, string, string]>([
    [
      'debounce with batch',
      { debounce: '1s', batch: {} },
      'CONFIG_INVALID',
      'pace.debounce and pace.batch exclude each other (a debounced run gets the latest event, a batch every event); choose one',
    ],
    [
      'perMinute with drop',
      { perMinute: 3, drop: { max: 1, per: '1 hour' } },
      'CONFIG_INVALID',
      'pace.perMinute and pace.drop exclude each other (starts over the rate wait under perMinute, and are dropped under drop); choose one, got perMinute 3 and drop {"max":1,"per":"1 hour"}',
    ],
    [
      'one more than MAX_BATCH',
      { batch: { max: MAX_BATCH + 1 } },
      'CONFIG_INVALID',
      `pace.batch.max must be at most MAX_BATCH (${MAX_BATCH}), got ${MAX_BATCH + 1}`,
    ],
    [
      'a fractional batch.max',
      { batch: { max: 1.5 } },
      'CONFIG_INVALID',
      'pace.batch.max must be a positive integer, got 1.5',
    ],
    [
      'an unknown field of pace.batch',
      { batch: { size: 2 } },
      'CONFIG_INVALID',
      'pace.batch.size must be a known field of pace.batch (max, wait), got 2',
    ],
    [
      'a maxWait 1 ms short of the window',
      { debounce: { window: 1_000, maxWait: 999 } },
      'CONFIG_INVALID',
      'pace.debounce.maxWait must be at least the window (1000 ms), got 999',
    ],
    [
      'a debounce object without its window',
      { debounce: {} },
      'PACE_BAD_DURATION',
      `pace.debounce.window: undefined ${DURATION}`,
    ],
    [
      'a drop per of 0',
      { drop: { max: 1, per: 0 } },
      'CONFIG_INVALID',
      'pace.drop.per must be longer than 0 ms, got 0',
    ],
    [
      'a drop per of "0 ms"',
      { drop: { max: 1, per: '0 ms' } },
      'CONFIG_INVALID',
      'pace.drop.per must be longer than 0 ms, got "0 ms"',
    ],
    [
      'a drop without max',
      { drop: { per: '1s' } },
      'CONFIG_INVALID',
      'pace.drop.max must be a positive integer, got undefined',
    ],
    ['a null drop', { drop: null }, 'CONFIG_INVALID', 'pace.drop must be an object { max, per }, got null'],
    [
      'an unknown field of pace.drop',
      { drop: { max: 1, per: '1s', burst: 2 } },
      'CONFIG_INVALID',
      'pace.drop.burst must be a known field of pace.drop (max, per), got 2',
    ],
  ])('refuses %s, naming the owner, the field and the value', (_name, raw, code, message) => {
    expect(expectError(pace(raw), code)).toBe(`${WHO}: ${message}`);
  });

  // What the coordinator rules read: durations in milliseconds, the defaults filled in, the gathering as a kind.
  const order = () => 1;
  it.each<[string, PaceOptions, CompiledPace]>([
    ['nothing: a run per start', {}, { dedupMs: DEFAULT_DEDUP_MS, kind: 'each' }],
    [
      'a debounce as a duration',
      { debounce: '1s' },
      { dedupMs: DEFAULT_DEDUP_MS, kind: 'debounce', windowMs: 1_000, maxWaitMs: undefined },
    ],
    [
      'a debounce whose maxWait is its window',
      { debounce: { window: 500, maxWait: 500 }, dedup: 0 },
      { dedupMs: 0, kind: 'debounce', windowMs: 500, maxWaitMs: 500 },
    ],
    [
      'a batch with its defaults',
      { batch: {} },
      { dedupMs: DEFAULT_DEDUP_MS, kind: 'batch', max: MAX_BATCH, waitMs: DEFAULT_BATCH_WAIT_MS },
    ],
    [
      'a batch of MAX_BATCH, a rate, an order and turns',
      { batch: { max: MAX_BATCH, wait: '2s' }, perMinute: 5, order, turns: 'key', dedup: '1 minute' },
      {
        dedupMs: 60_000,
        rate: { max: 5, perMs: MINUTE_MS, drop: false },
        order,
        turns: true,
        kind: 'batch',
        max: MAX_BATCH,
        waitMs: 2_000,
      },
    ],
    [
      'the smallest batch and drop',
      { batch: { max: 1 }, drop: { max: 1, per: 1 } },
      { dedupMs: DEFAULT_DEDUP_MS, rate: { max: 1, perMs: 1, drop: true }, kind: 'batch', max: 1, waitMs: 10_000 },
    ],
    [
      'a drop alone: a run per start, some dropped',
      { drop: { max: 2, per: '1 hour' } },
      { dedupMs: DEFAULT_DEDUP_MS, rate: { max: 2, perMs: 3_600_000, drop: true }, kind: 'each' },
    ],
  ])('reads %s', (_name, raw, expected) => {
    const compiled = parsePace(raw, WHO);
    expect(compiled).toStrictEqual(expected);
    expect(Object.isFrozen(compiled)).toBe(true);
    if (compiled.rate !== undefined) expect(Object.isFrozen(compiled.rate)).toBe(true);
  });

  it('has the documented defaults: 10 minutes of dedup, 10 s of batch wait, 1,000 events a batch', () => {
    expect([DEFAULT_DEDUP_MS, DEFAULT_BATCH_WAIT_MS, MAX_BATCH, MINUTE_MS]).toEqual([600_000, 10_000, 1_000, 60_000]);
  });
});
