#!/usr/bin/env node
/**
 * The package smoke test from the command line (after `npm run build`): node scripts/smoke/run.mjs.
 * Prints each check and the time it took; exits 1 if any failed. `npm test` runs the same checks through
 * test/smoke.test.ts.
 */
import { PROJECTS, attw, pack, project, publint, testOnlyFiles, workspace } from './smoke.mjs';

const started = performance.now();
const { dir, cleanup } = workspace();
let failed = 0;
const report = (ok, what, detail = '') => {
  if (!ok) failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${ok || !detail ? '' : `\n${detail}`}`);
};
try {
  const { tarball, files } = await pack(dir);
  report(testOnlyFiles(files).length === 0, `tarball: ${files.length} files, none test-only`, testOnlyFiles(files).join('\n'));
  const checks = await Promise.all([publint(tarball), attw(tarball), ...Object.keys(PROJECTS).map((name) => project(name, tarball, dir))]);
  const [lint, types, ...projects] = checks;
  report(lint.code === 0, 'publint --strict', lint.stdout + lint.stderr);
  report(types.code === 0, 'attw --profile node16', types.stdout + types.stderr);
  for (const p of projects) {
    const step = [p.install, p.build, p.start].find((s) => s && s.code !== 0);
    const output = p.start?.stdout ?? '';
    const ok = !step && output === p.expected && p.emitted !== false;
    report(ok, `project ${p.name}`, step ? `${step.command} exited ${step.code}\n${step.stdout}${step.stderr}` : `printed:\n${output}expected:\n${p.expected}`);
  }
} finally {
  cleanup();
}
console.log(`${failed ? `${failed} failed` : 'all passed'} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exitCode = failed ? 1 : 0;
