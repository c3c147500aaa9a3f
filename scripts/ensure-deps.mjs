// Installs the locked dependencies (`npm ci`) when node_modules is missing or older than package-lock.json,
// so that `npm test` and `npm run demo` work on a fresh clone.
import { execSync } from 'node:child_process';
import { existsSync, lstatSync, statSync } from 'node:fs';

const stamp = 'node_modules/.package-lock.json';
// A linked node_modules (a git worktree sharing another checkout's) is that checkout's to install: `npm ci` here
// would empty it under everyone using it.
const linked = existsSync('node_modules') && lstatSync('node_modules').isSymbolicLink();
const stale = !linked && (!existsSync(stamp) || statSync(stamp).mtimeMs < statSync('package-lock.json').mtimeMs);
if (stale) {
  console.error('sluice: installing dependencies (npm ci)…');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit' });
}
