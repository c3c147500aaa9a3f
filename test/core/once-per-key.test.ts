import { describe, expect, it } from 'vitest';
import { OncePerKey } from '../../src/core/once-per-key.js';

describe('OncePerKey', () => {
  it('makes a key’s promise once and shares it; a rejected one is made again by the next caller', async () => {
    const once = new OncePerKey<string>();
    let made = 0;
    const fail = { now: true };
    const make = async (): Promise<void> => {
      made++;
      if (fail.now) throw new Error('not yet');
    };
    const [a, b] = [once.get('t', make), once.get('t', make)];
    expect(a).toBe(b);
    await expect(a).rejects.toThrow('not yet');
    fail.now = false;
    await once.get('t', make);
    await once.get('t', make);
    expect(made).toBe(2);
    once.clear();
    await once.get('t', make);
    expect(made).toBe(3);
  });
});
