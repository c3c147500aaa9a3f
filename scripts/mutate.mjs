// Mutation testing of the core modules with StrykerJS (stryker.config.mjs), and a score per file that counts
// a mutant only as killed when an assertion failed: a timeout (a test that hung) is not a kill.
//
//   node scripts/mutate.mjs                  every core file (npm run mutate): slow, run it before a release
//   node scripts/mutate.mjs src/x.ts …       the files named
//   node scripts/mutate.mjs --changed        the core files changed since the last tag (or, without a tag, in
//                                            the last 20 commits), stopped after --budget-min minutes (10)
//   --min 90                                 exit 1 when a file that was mutated to the end scores below this
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CORE } from '../stryker.config.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    changed: { type: 'boolean' },
    'budget-min': { type: 'string' },
    min: { type: 'string' },
    concurrency: { type: 'string' },
  },
});

function changedSinceLastTag() {
  const git = (...args) => execFileSync('git', args, { encoding: 'utf8' }).trim();
  let base;
  try {
    base = git('describe', '--tags', '--abbrev=0');
  } catch {
    const count = Number(git('rev-list', '--count', 'HEAD'));
    base = count > 20 ? 'HEAD~20' : git('rev-list', '--max-parents=0', 'HEAD').split('\n')[0];
  }
  const changed = new Set(git('diff', '--name-only', base, 'HEAD').split('\n'));
  console.log(`mutate: core files changed since ${base}`);
  return CORE.filter((f) => changed.has(f));
}

const files = values.changed ? changedSinceLastTag() : positionals.length > 0 ? positionals : CORE;
if (files.length === 0) {
  console.log('mutate: no core file to mutate');
  process.exit(0);
}
const budgetMs = Number(values['budget-min'] ?? (values.changed ? 10 : 24 * 60)) * 60_000;
const report = 'reports/mutation/mutation.json';
rmSync(report, { force: true });
console.log(`mutate: ${files.join(', ')} (stopped after ${budgetMs / 60_000} min)`);
const args = [
  'stryker',
  'run',
  '--mutate',
  files.join(','),
  ...(values.concurrency ? ['--concurrency', values.concurrency] : []),
];
const child = spawn('npx', args, { stdio: 'inherit', detached: true });
let outOfTime = false;
const timer = setTimeout(() => {
  outOfTime = true;
  console.log(`mutate: out of time after ${budgetMs / 60_000} min; files not finished are not scored`);
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {}
}, budgetMs);
const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
clearTimeout(timer);
if (!existsSync(report)) {
  console.log(
    outOfTime ? 'mutate: no report (stopped before the end)' : `mutate: stryker exited ${code} without a report`,
  );
  process.exit(outOfTime ? 0 : 1);
}

// Score per file: killed / (killed + survived + timed out + no coverage); ignored and compile errors are left out.
const { files: results } = JSON.parse(readFileSync(report, 'utf8'));
const min = values.min === undefined ? undefined : Number(values.min);
let failed = false;
console.log(
  '\n| file | mutants | killed | survived | timeout | no coverage | score |\n|---|---:|---:|---:|---:|---:|---:|',
);
let all = { n: 0, killed: 0 };
for (const [file, { mutants }] of Object.entries(results)) {
  const count = (s) => mutants.filter((m) => m.status === s).length;
  const killed = count('Killed');
  const scored = killed + count('Survived') + count('Timeout') + count('NoCoverage');
  const score = scored === 0 ? 100 : (100 * killed) / scored;
  all = { n: all.n + scored, killed: all.killed + killed };
  console.log(
    `| ${file} | ${scored} | ${killed} | ${count('Survived')} | ${count('Timeout')} | ${count('NoCoverage')} | ${score.toFixed(1)}% |`,
  );
  if (min !== undefined && score < min) failed = true;
}
console.log(`| all | ${all.n} | ${all.killed} | | | | ${((100 * all.killed) / Math.max(1, all.n)).toFixed(1)}% |`);
if (failed) {
  console.log(`mutate: a file scored below ${min}%`);
  process.exit(1);
}
