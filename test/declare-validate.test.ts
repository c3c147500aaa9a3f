import { describe, expect, it } from 'vitest';
import type { SubscriberOptions } from '../src/index.js';
import { checkName } from '../src/declare/checks.js';
import { MAX_WORKERS, parseDefaults, parseOptions } from '../src/declare/parse.js';
import { expectError } from './expect-error.js';

// Every setting a subscriber or router takes, refused and accepted at its edges, with the whole message a
// user reads: `<who>: <field> must be <expected>, got <value>` (docs/subscribers.md).
const WHO = 'subscriber "bill"';
const check = (options: unknown) => () => parseOptions(options as SubscriberOptions, WHO);
const DURATION = "is not a duration (milliseconds, or text such as '500 ms', '10s', '2 minutes', '1 hour')";
const OPTIONS = 'name, workers, byKey, key, group, decode, batch, retry, deadLetter, pace, timeoutMs';
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
      'decode must be a function or an object with parse(), got 42',
    ],
    [
      'decode null',
      { decode: null },
      'CONFIG_INVALID',
      'decode must be a function or an object with parse(), got null',
    ],
    [
      'decode without parse()',
      { decode: { parse: 'json' } },
      'CONFIG_INVALID',
      'decode must be a function or an object with parse(), got {"parse":"json"}',
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
