import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { App } from '../app/app.js';
import { CliError, EXIT } from './errors.js';

/** Whether `value` is a Sluice App (by shape: the module may load another copy of the package). */
function isApp(value: unknown): value is App {
  const v = value as Partial<Record<keyof App, unknown>> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    ['start', 'stop', 'run', 'asyncapi', 'brokers', 'subscribers'].every((m) => typeof v[m as keyof App] === 'function')
  );
}

/** Whether `file` is TypeScript, which loads through ts-node (see {@link loadApp}). */
export const isTypeScript = (file: string): boolean => /\.[cm]?ts$/.test(file);

/**
 * Imports `file` and finds the App it exports: `exportName` if given, else the default export, else the one
 * named export that is an App. Refuses (exit code 3) a file that does not exist or does not load, and a
 * module with no App or with several and no `exportName`.
 */
export async function loadApp(file: string, exportName?: string): Promise<App> {
  const absolute = path.resolve(file);
  if (!existsSync(absolute)) throw new CliError(EXIT.module, `${file}: no such file`);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (error) {
    throw new CliError(EXIT.module, `${file} does not load: ${(error as Error)?.stack ?? String(error)}`);
  }
  if (exportName !== undefined) {
    if (isApp(module[exportName])) return module[exportName];
    throw new CliError(EXIT.module, `${file} exports no App named "${exportName}"`);
  }
  if (isApp(module.default)) return module.default;
  const named = Object.entries(module).filter(([, v]) => isApp(v));
  if (named.length === 1) return named[0]![1] as App;
  if (named.length === 0)
    throw new CliError(
      EXIT.module,
      `${file} exports no App (export one: \`export default app\` or \`export const app\`)`,
    );
  throw new CliError(
    EXIT.module,
    `${file} exports several Apps (${named.map(([n]) => n).join(', ')}); pick one with --export <name>`,
  );
}
