/**
 * InputGate on a ManualClock: how far a shard's timers may go while its input is behind (taken over, or
 * reading a backlog), and what ends that: a delivery read as it comes, the consumer's lag at 0, 30 s.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { BACKLOG_MS, HOLD_MAX_MS, InputGate, LAG_POLL_MS } from '../../src/pace-stage/input-gate.js';

const T = 1_000_000;

/** A gate over a lag the test sets, counting how often it is asked and how often the gate opened. */
function gateOf(held: boolean, clock = new ManualClock(T)) {
  const lag: { now: number | undefined; asked: number } = { now: undefined, asked: 0 };
  const gate = new InputGate(
    clock,
    () => {
      lag.asked++;
      return Promise.resolve(lag.now);
    },
    held,
  );
  let opened = 0;
  gate.onChange(() => opened++);
  return { gate, lag, clock, opened: () => opened };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('InputGate', () => {
  it('lets timers fire on the clock while the input comes as it is appended', () => {
    const { gate, lag } = gateOf(false);
    gate.input(T - BACKLOG_MS, T); // a second old: still as it comes
    expect(gate.behind).toBe(false);
    expect(gate.limit(T + 5_000)).toBe(T + 5_000);
    expect(lag.asked).toBe(0);
  });

  it('holds a shard taken over at the newest delivery time read, until a delivery comes as it is appended', async () => {
    const { gate, lag, opened } = gateOf(true);
    await turn();
    expect(lag.asked).toBe(1); // asked at once; not known yet
    expect(gate.limit(T)).toBe(Number.NEGATIVE_INFINITY);
    gate.input(T - 9_000, T);
    gate.input(T - 5_000, T);
    expect(gate.limit(T)).toBe(T - 5_000);
    expect(opened()).toBe(0);
    gate.input(T - 100, T);
    expect(gate.behind).toBe(false);
    expect(opened()).toBe(1);
    expect(gate.limit(T)).toBe(T);
    gate.close();
  });

  it('opens once the consumer says nothing is unread, asking every 250 ms', async () => {
    const { gate, lag, clock, opened } = gateOf(true);
    lag.now = 3;
    await turn();
    await clock.advance(LAG_POLL_MS - 1);
    expect(lag.asked).toBe(1);
    await clock.advance(1);
    await turn();
    expect(lag.asked).toBe(2);
    lag.now = 0;
    await clock.advance(LAG_POLL_MS);
    await turn();
    expect(gate.behind).toBe(false);
    expect(opened()).toBe(1);
    await clock.advance(10 * LAG_POLL_MS);
    expect(lag.asked).toBe(3); // no more asks once open
  });

  it('falls behind on a delivery read more than a second after it was appended, and is never held past 30 s', async () => {
    const { gate, lag, clock } = gateOf(false);
    gate.input(T - BACKLOG_MS - 1, T);
    expect(gate.behind).toBe(true);
    expect(gate.limit(T)).toBe(T - BACKLOG_MS - 1);
    lag.now = undefined; // the broker cannot say (down)
    for (let t = 0; t < HOLD_MAX_MS - LAG_POLL_MS; t += LAG_POLL_MS) {
      await clock.advance(LAG_POLL_MS);
      await turn();
    }
    expect(gate.behind).toBe(true);
    await clock.advance(LAG_POLL_MS);
    await turn();
    expect(gate.behind).toBe(false);
  });

  it('asks nothing more once closed', async () => {
    const { gate, lag, clock } = gateOf(true);
    lag.now = 5;
    await turn();
    gate.close();
    await clock.advance(10 * LAG_POLL_MS);
    expect(lag.asked).toBe(1);
  });
});
