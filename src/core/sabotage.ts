/**
 * Deliberately broken variants of the engine, for the deterministic simulator's own tests (test/sim): each
 * switch breaks one promise, and a test asserts that the simulator's checkers catch it within 2,000 seeds.
 * A checker that cannot catch a known bug would not catch an unknown one. Never set outside those tests;
 * not exported from the package.
 */
export const sabotage = {
  /** ShardHost hands out a record's outputs as soon as it is applied, before it is durable. */
  releaseEarly: false,
  /** Frames are read without checking their CRC. */
  skipCrc: false,
  /** A new segment file is used without fsyncing its directory. */
  skipDirSync: false,
  /** Recovery applies each replayed record twice. */
  applyTwice: false,
  /** Snapshots (compaction) drop the remembered event IDs and broker offsets of pace coordinators. */
  forgetIds: false,
  /** Timers restored from a snapshot are dropped on restart. */
  loseTimers: false,
  /** Snapshots (compaction) drop the starts that wait for a pace rate. */
  forgetWaiting: false,
  /** Pace rates (`perMinute`, `drop`) never hold a start back. */
  ignoreRates: false,
  /** `app.send` reads the clock twice: once to decide whether the event opens a window, once to stamp it. */
  readClockTwice: false,
  /**
   * The pace stage opens its shards one at a time, each handing out its runs (and firing its timers) before
   * the next has replayed, and routes records by the shards opened so far.
   */
  serveShardsInTurn: false,
};

export type Sabotage = keyof typeof sabotage;
