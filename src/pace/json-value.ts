/**
 * A value as JSON would give it back — `JSON.parse(JSON.stringify(value))` — without the text in between:
 * a pace event is applied live as a replay will read it from the journal, so live and recovered runs see
 * the same value, and the sender's object is not shared with the coordinator (changing it after `send`
 * changes nothing). Follows JSON.stringify: `toJSON` is called; `undefined`, functions and symbols are left
 * out of objects and become `null` in arrays; non-finite numbers become `null` (with `finite`, they throw
 * {@link NonFiniteNumber} instead); a BigInt or a cycle throws a TypeError, as JSON.stringify does.
 */
export function jsonValue(value: unknown, options: { readonly finite?: boolean } = {}): unknown {
  return copy(value, '', [], true, options.finite === true);
}

function copy(value: unknown, key: string, path: object[], top: boolean, finite: boolean): unknown {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (Number.isFinite(value)) return value === 0 ? 0 : value; // -0 reads back as 0
      if (finite) throw new NonFiniteNumber(value);
      return null;
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'undefined':
    case 'function':
    case 'symbol':
      return top ? undefined : SKIP;
  }
  if (value === null) return null;
  const object = value as object;
  if (path.includes(object)) throw new TypeError('Converting circular structure to JSON');
  path.push(object);
  try {
    if (Array.isArray(object)) {
      const out = new Array<unknown>(object.length);
      for (let i = 0; i < object.length; i++) {
        const v = copy(object[i], String(i), path, false, finite);
        out[i] = v === SKIP ? null : v;
      }
      return out;
    }
    // Boxed primitives read as their value, as in JSON.stringify.
    if (object instanceof Number || object instanceof String || object instanceof Boolean)
      return copy(object.valueOf(), key, path, top, finite);
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(object)) {
      const v = copy((object as Record<string, unknown>)[k], k, path, false, finite);
      if (v === SKIP) continue;
      // `__proto__` as an own key, as JSON.parse makes it (an assignment would set the prototype)
      if (k === '__proto__')
        Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      else out[k] = v;
    }
    return out;
  } finally {
    path.pop();
  }
}

const SKIP = Symbol('skip');

/** What {@link jsonValue} throws, with `finite`, for `NaN` or `±Infinity`: JSON would write `null`. */
export class NonFiniteNumber extends TypeError {
  constructor(readonly value: number) {
    super(`${value} has no JSON (JSON.stringify writes null)`);
  }
}

/**
 * Whether a value `JSON.parse` gave back is one JSON writes as it is: it holds no `-0` and no number past the
 * double range (text such as `1e400` parses to Infinity), which JSON.stringify writes as `0` and `null`. Such
 * a value, journaled as its text, would read back from a snapshot (written by JSON.stringify) as another. False
 * too for a value nested too deep to walk (the caller copies it, and fails as a copy does).
 */
export function writtenAsParsed(value: unknown): boolean {
  try {
    return written(value);
  } catch {
    return false; // RangeError: nested past the stack
  }
}

function written(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) {
    for (const v of value) if (!written(v)) return false;
    return true;
  }
  for (const k of Object.keys(value)) if (!written((value as Record<string, unknown>)[k])) return false;
  return true;
}
