#!/usr/bin/env node
/**
 * The `sluice` command: `run`, `asyncapi`, `docs serve`, `publish` (docs/cli.md). Each loads a module that
 * exports an App; a TypeScript module loads through ts-node, with no build step.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { asyncapi, publish, run, serveDocs } from './commands.js';
import { CONSOLE_FLAGS, consoleCommand } from './console.js';
import { CliError, EXIT } from './errors.js';
import { isTypeScript, loadApp } from './load.js';
import { supervise } from './reload.js';

const USAGE = `Usage: sluice <command> <module> [options]

Commands:
  run <module>                      run the app until SIGINT or SIGTERM, then stop it gracefully
      --reload                      restart it (after a graceful stop) when a file changes
      --watch <dir>                 the folder --reload watches (default: the module's folder)
  asyncapi <module>                 print the app's AsyncAPI 3.0 document (JSON)
      --yaml                        as YAML
      -o, --out <file>              into a file
  docs serve <module>               serve the document as a page (and /asyncapi.json)
      --port <n>                    default 8080 (0: any free port)
      --host <address>              default 127.0.0.1
  publish <module> <topic> <json>   publish one message through the app's broker
      --key <key>                   its key
      --header <name=value>         a header (repeatable)
  console <what> [args]             ask a running app's console (http.console) and print the answer:
      inspect | runs <subscriber> | key <subscriber> <key> | dead-letters <subscriber>
      pause <subscriber> | resume <subscriber> | cancel <subscriber> <runId> | replay <subscriber>
      --url <http://host:port>      the app's HTTP server (default $SLUICE_CONSOLE_URL, or 127.0.0.1:8080)
      --token <token>               an action's token (default $SLUICE_CONSOLE_TOKEN)
      --stage, --shard, --limit, --after       runs; --partition, --limit, --after   dead-letters
      --partition, --from, --to, --limit       replay

Every command but console takes --export <name> (the App to use, when the module exports several), and -h, --help.
Exit codes: 0 done, 1 the app failed, 2 usage error, 3 the module does not load or exports no App.`;

const OPTIONS = {
  export: { type: 'string' },
  reload: { type: 'boolean' },
  watch: { type: 'string' },
  yaml: { type: 'boolean' },
  out: { type: 'string', short: 'o' },
  port: { type: 'string' },
  host: { type: 'string' },
  key: { type: 'string' },
  header: { type: 'string', multiple: true },
  url: { type: 'string' },
  token: { type: 'string' },
  stage: { type: 'string' },
  shard: { type: 'string' },
  limit: { type: 'string' },
  after: { type: 'string' },
  partition: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const satisfies ParseArgsConfig['options'];
/** The options each command takes, beside --export and --help. */
const ALLOWED: Record<string, readonly string[]> = {
  run: ['reload', 'watch'],
  asyncapi: ['yaml', 'out'],
  'docs serve': ['port', 'host'],
  publish: ['key', 'header'],
  console: CONSOLE_FLAGS,
};

const usage = (message: string): CliError => new CliError(EXIT.usage, `${message} (sluice --help tells the usage)`);

/** Runs the command `argv` (without `node` and the script) names; resolves with the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw usage((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.version === true) {
    const pkg = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    process.stdout.write(`${(JSON.parse(pkg) as { version: string }).version}\n`);
    return EXIT.ok;
  }
  const [first, ...rest] = positionals;
  if (values.help === true || first === 'help') return (void process.stdout.write(`${USAGE}\n`), EXIT.ok);
  if (first === undefined) throw usage('a command is needed');
  const command = first === 'docs' ? `docs ${rest.shift() ?? ''}` : first;
  const allowed = ALLOWED[command];
  if (allowed === undefined) throw usage(`unknown command "${command.trim()}"`);
  for (const given of Object.keys(values))
    if ((given !== 'export' || command === 'console') && !allowed.includes(given))
      throw usage(`${command} takes no --${given}`);
  if (command === 'console') return (await consoleCommand(rest, values), EXIT.ok);
  const [module, ...args] = rest;
  if (module === undefined) throw usage(`${command}: the module exporting the App is needed`);
  const wanted = command === 'publish' ? 2 : 0;
  if (args.length !== wanted)
    throw usage(`${command}: ${wanted === 2 ? 'a topic and a JSON value are needed' : `unexpected ${args.join(' ')}`}`);
  if (command === 'run' && values.reload === true) {
    const pass = [module, ...(values.export !== undefined ? ['--export', values.export] : [])];
    const main = fileURLToPath(import.meta.url);
    return supervise(main, pass, path.resolve(values.watch ?? path.dirname(module)));
  }
  if (isTypeScript(module) && existsSync(module)) registerTypeScript(); // else loadApp tells it is missing
  const app = await loadApp(module, values.export);
  switch (command) {
    case 'run':
      await run(app);
      break;
    case 'asyncapi':
      asyncapi(app, { yaml: values.yaml === true, out: values.out });
      break;
    case 'docs serve':
      await serveDocs(app, { host: values.host ?? '127.0.0.1', port: portOf(values.port ?? '8080') });
      break;
    case 'publish':
      await publish(app, args[0]!, args[1]!, { key: values.key, headers: headersOf(values.header ?? []) });
      break;
  }
  return EXIT.ok;
}

function portOf(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535) throw usage(`--port must be an integer from 0 to 65535, got "${text}"`);
  return port;
}

function headersOf(given: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const h of given) {
    const at = h.indexOf('=');
    if (at <= 0) throw usage(`--header must be name=value, got "${h}"`);
    headers[h.slice(0, at)] = h.slice(at + 1);
  }
  return headers;
}

/** Loads TypeScript modules through ts-node's ESM hooks, found from the current folder (the user's project). */
function registerTypeScript(): void {
  const from = pathToFileURL(`${process.cwd()}${path.sep}`);
  try {
    createRequire(from).resolve('ts-node/esm');
  } catch {
    throw new CliError(
      EXIT.module,
      'a TypeScript module loads through ts-node: install it (npm i -D ts-node typescript)',
    );
  }
  register('ts-node/esm', from);
}

// Run as a command (a bin link resolves to this file), not imported by a test.
const invoked = process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invoked) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      const cli =
        error instanceof CliError ? error : new CliError(EXIT.failed, (error as Error)?.stack ?? String(error));
      process.stderr.write(`sluice: ${cli.message}\n`);
      process.exitCode = cli.code;
    },
  );
}
