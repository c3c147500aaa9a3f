/** The most runs whose links are kept at once: past it, the oldest run's are forgotten. */
export const RUNS_LINKED = 4_096;

/**
 * The trace contexts of the events that joined each paced run, kept in memory (the pace journal keeps an
 * event's value, not the headers it came with) until the run's span is made: at most `perRun` per run (the
 * first ones), for at most {@link RUNS_LINKED} runs (the oldest forgotten first). A run that leaves after a
 * restart, or on another instance, finds none.
 */
export class RunLinks<C> {
  private readonly runs = new Map<string, C[]>();

  constructor(
    private readonly perRun: number,
    private readonly most = RUNS_LINKED,
  ) {}

  /** An event carrying `context` joined run `runId`. */
  add(runId: string, context: C): void {
    if (this.perRun === 0) return;
    let contexts = this.runs.get(runId);
    if (contexts === undefined) {
      if (this.runs.size >= this.most) this.runs.delete(this.runs.keys().next().value!);
      contexts = [];
      this.runs.set(runId, contexts);
    }
    if (contexts.length < this.perRun) contexts.push(context);
  }

  /** The contexts of run `runId`'s events, as far as they are known here. */
  of(runId: string): readonly C[] | undefined {
    return this.runs.get(runId);
  }

  /** The run is over: its contexts are not needed again. */
  forget(runId: string): void {
    this.runs.delete(runId);
  }

  /** How many runs have contexts kept. */
  get size(): number {
    return this.runs.size;
  }
}
