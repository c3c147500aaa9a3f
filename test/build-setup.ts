/**
 * Vitest global setup: the crash tests' child processes import the compiled package (`dist/`), since a
 * child started per kill cannot pay for compiling TypeScript each time. So that a plain `vitest run` on a
 * fresh clone works, and never tests a stale build, this compiles `src/` when `dist/` is missing or older
 * than any source file or either tsconfig.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

function newestMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMs(file) : statSync(file).mtimeMs);
  }
  return newest;
}

export function setup(): void {
  const built = 'dist/index.js';
  if (
    existsSync(built) &&
    statSync(built).mtimeMs >=
      Math.max(newestMs('src'), statSync('tsconfig.json').mtimeMs, statSync('tsconfig.build.json').mtimeMs)
  )
    return;
  rmSync('dist', { recursive: true, force: true }); // as `npm run build` does: no output of a source file since removed
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    stdio: 'inherit',
  });
}
