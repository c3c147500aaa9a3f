#!/usr/bin/env node
/**
 * The package smoke test from the command line (after `npm run build`): node scripts/smoke/run.mjs.
 * Prints each check with the time its steps took, and the total; exits 1 if any failed. `npm test` runs the same checks through
 * test/project/smoke.test.ts.
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
  const testOnly = testOnlyFiles(files);
  report(testOnly.length === 0, `tarball: ${files.length} files, none test-only`, testOnly.join('\n'));
  const checks = await Promise.all([
    publint(tarball),
    attw(tarball),
    ...Object.keys(PROJECTS).map((name) => project(name, tarball, dir)),
  ]);
  const [lint, types, ...projects] = checks;
  report(lint.code === 0, `publint --strict (${lint.ms} ms)`, lint.stdout + lint.stderr);
  report(types.code === 0, `attw --profile node16 (${types.ms} ms)`, types.stdout + types.stderr);
  for (const p of projects) {
    const step = [p.install, p.build, p.start].find((s) => s && s.code !== 0);
    const output = p.start?.stdout ?? '';
    const ok = !step && output === p.expected && p.start.stderr === '' && p.emitted !== false;
    const times = ['install', 'build', 'start']
      .filter((s) => p[s])
      .map((s) => `${s} ${p[s].ms} ms`)
      .join(', ');
    report(
      ok,
      `project ${p.name} (${times})`,
      step
        ? `${step.command} exited ${step.code}\n${step.stdout}${step.stderr}`
        : `printed:\n${output}${p.start.stderr}expected:\n${p.expected}`,
    );
  }
} finally {
  cleanup();
}
console.log(`${failed ? `${failed} failed` : 'all passed'} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exitCode = failed ? 1 : 0;
