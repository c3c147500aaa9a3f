#!/usr/bin/env node
// `npm test`: installs the locked dependencies if missing, runs the static checks (typecheck, lint, format,
// import rules, API doc comments) two at a time, each one's output printed whole when it ends, builds, and
// runs the tests (vitest; extra arguments go to it). Exits non-zero on the first failed step, after the
// checks under way have ended.
//
//   SLUICE_TEST_CHECKS=skip   no static checks: they read the sources, which are the same on every Node.js
//                             line, so CI runs them on one line only (see docs/testing.md)
import { spawn, spawnSync } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const say = (msg) => process.stderr.write(`[test] ${msg}\n`);

function step(args) {
  const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

/** Runs `npm run <script>`, its output kept and printed when it ends; resolves to whether it passed. */
function check(script) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(npm, ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => out.push(d));
    child.on('close', (code) => {
      const text = Buffer.concat(out).toString();
      if (text.trim()) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
      say(`${script}: ${code === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      resolve(code === 0);
    });
  });
}

step(['scripts/ensure-deps.mjs']);

if (process.env.SLUICE_TEST_CHECKS === 'skip') say('static checks skipped (SLUICE_TEST_CHECKS=skip)');
else {
  const queue = ['lint', 'typecheck', 'format:check', 'docs:api:check', 'deps:check'];
  let failed = false;
  const worker = async () => {
    for (let script = queue.shift(); script !== undefined && !failed; script = queue.shift())
      if (!(await check(script))) failed = true;
  };
  await Promise.all([worker(), worker()]);
  if (failed) process.exit(1);
}

const build = spawnSync(npm, ['run', '--silent', 'build'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const vitest = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], {
  stdio: 'inherit',
});
process.exit(vitest.status ?? 1);
