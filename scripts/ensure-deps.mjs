// Installs the locked dependencies when node_modules is missing or older than package-lock.json,
// so that `npm test` and `npm run demo` work on a fresh clone.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const stamp = 'node_modules/.package-lock.json';
const stale = !existsSync(stamp) || statSync(stamp).mtimeMs < statSync('package-lock.json').mtimeMs;
if (stale) {
  // `npm install` from the lock file rather than `npm ci`: vite lists an optional dependency that the
  // registry does not serve, which `npm install` skips and `npm ci` refuses.
  console.error('sluice: installing dependencies (npm install)…');
  execSync('npm install --no-audit --no-fund', { stdio: 'inherit' });
}
