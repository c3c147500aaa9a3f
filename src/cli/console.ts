/**
 * `sluice console <what> …`: the console's views and actions from a terminal, asked of a running app's
 * console API over HTTP (its `http.console`; docs/console.md). Prints the answer as JSON.
 */
import { CliError, EXIT } from './errors.js';

/** The options `sluice console` takes (as `node:util` parseArgs gives them). */
export interface ConsoleFlags {
  readonly url?: string | undefined;
  readonly token?: string | undefined;
  readonly stage?: string | undefined;
  readonly shard?: string | undefined;
  readonly limit?: string | undefined;
  readonly after?: string | undefined;
  readonly partition?: string | undefined;
  readonly from?: string | undefined;
  readonly to?: string | undefined;
}

/** Each subcommand: its positional arguments, its flags, and whether it is an action (POST, with the token). */
const COMMANDS: Readonly<Record<string, { args: readonly string[]; flags: readonly string[]; action: boolean }>> = {
  inspect: { args: [], flags: [], action: false },
  runs: { args: ['subscriber'], flags: ['stage', 'shard', 'limit', 'after'], action: false },
  key: { args: ['subscriber', 'key'], flags: [], action: false },
  'dead-letters': { args: ['subscriber'], flags: ['partition', 'limit', 'after'], action: false },
  pause: { args: ['subscriber'], flags: [], action: true },
  resume: { args: ['subscriber'], flags: [], action: true },
  cancel: { args: ['subscriber', 'runId'], flags: [], action: true },
  replay: { args: ['subscriber'], flags: ['partition', 'from', 'to', 'limit'], action: true },
};

/** The flags `sluice console` takes besides each subcommand's own. */
export const CONSOLE_FLAGS = ['url', 'token', 'stage', 'shard', 'limit', 'after', 'partition', 'from', 'to'];

const usage = (message: string): CliError =>
  new CliError(EXIT.usage, `console: ${message} (sluice --help tells the usage)`);

/**
 * Runs `sluice console <what> [args]`: asks the console at `--url` (default `$SLUICE_CONSOLE_URL`, else
 * http://127.0.0.1:8080) and prints its answer. An action sends `--token` (default `$SLUICE_CONSOLE_TOKEN`).
 * An answer other than 2xx fails (exit 1) with the console's code and message.
 */
export async function consoleCommand(
  positionals: readonly string[],
  flags: ConsoleFlags,
  out: (text: string) => void = (text) => void process.stdout.write(text),
): Promise<void> {
  const [what, ...args] = positionals;
  const command = what === undefined ? undefined : COMMANDS[what];
  if (what === undefined || command === undefined)
    throw usage(`one of ${Object.keys(COMMANDS).join(', ')} is needed${what === undefined ? '' : `, got "${what}"`}`);
  if (args.length !== command.args.length)
    throw usage(
      `${what} takes ${command.args.length === 0 ? 'no arguments' : command.args.map((a) => `<${a}>`).join(' ')}`,
    );
  for (const [name, value] of Object.entries(flags))
    if (value !== undefined && name !== 'url' && name !== 'token' && !command.flags.includes(name))
      throw usage(`${what} takes no --${name}`);
  const base = flags.url ?? process.env.SLUICE_CONSOLE_URL ?? 'http://127.0.0.1:8080';
  let url: URL;
  try {
    url = new URL(`console/api/${what}`, base.endsWith('/') ? base : `${base}/`);
  } catch {
    throw usage(`--url must be the app's HTTP address (http://host:port), got "${base}"`);
  }
  const named = Object.fromEntries(command.args.map((a, i) => [a, args[i]!]));
  const fields: Record<string, string> = { ...named };
  for (const f of command.flags) {
    const v = flags[f as keyof ConsoleFlags];
    if (v !== undefined) fields[f === 'from' ? 'fromOffset' : f === 'to' ? 'toOffset' : f] = v;
  }
  let response: Response;
  try {
    if (command.action) {
      const token = flags.token ?? process.env.SLUICE_CONSOLE_TOKEN;
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(fields),
      });
    } else {
      for (const [k, v] of Object.entries(fields)) url.searchParams.set(k, v);
      response = await fetch(url);
    }
  } catch (error) {
    const cause = (error as Error).cause;
    const why = cause instanceof Error ? cause.message : error instanceof Error ? error.message : String(error);
    throw new CliError(EXIT.failed, `console: ${url.origin} did not answer: ${why}`);
  }
  const text = await response.text();
  if (!response.ok) {
    let told = text.trim();
    try {
      const e = JSON.parse(text) as { code?: string; message?: string };
      told = `${e.code ?? response.status}: ${e.message ?? ''}`;
    } catch {
      // not JSON: told as it is
    }
    throw new CliError(EXIT.failed, `console: ${what} answered ${response.status}: ${told}`);
  }
  out(`${JSON.stringify(JSON.parse(text) as unknown, null, 2)}\n`);
}
