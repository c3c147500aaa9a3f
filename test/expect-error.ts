import { expect } from 'vitest';
import { SluiceError } from '../src/index.js';

/** Runs `fn`, expects a SluiceError with `code` whose message matches every part; returns the message. */
export function expectError(fn: () => unknown, code: string, ...parts: (string | RegExp)[]): string {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(SluiceError);
  expect((caught as SluiceError).code).toBe(code);
  for (const p of parts) expect((caught as SluiceError).message).toMatch(p);
  return (caught as SluiceError).message;
}
