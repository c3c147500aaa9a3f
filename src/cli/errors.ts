/**
 * The exit codes of the `sluice` command (docs/cli.md): 0 done; 1 the app failed (it did not start, a
 * publish was refused); 2 a usage error (an unknown command or flag, a missing or bad argument); 3 the module
 * does not load or exports no App.
 */
export const EXIT = Object.freeze({ ok: 0, failed: 1, usage: 2, module: 3 });

/** A failure the command reports in one line on stderr, exiting with `code`. */
export class CliError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
