import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The package as a project that installs it sees it (scripts/smoke/smoke.mjs): `npm pack`, five fresh
 * projects that install the tarball, build and run a subscriber on the MemoryBroker, and publint and
 * arethetypeswrong on the tarball. Needs dist/ (test/build-setup.ts builds it).
 */
interface Step {
  command: string;
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}
interface Project {
  name: string;
  install: Step;
  build?: Step;
  start?: Step;
  expected: string;
  emitted?: boolean;
}
interface Smoke {
  PROJECTS: Record<string, unknown>;
  workspace(): { dir: string; cleanup: () => void };
  pack(dir: string): Promise<{ tarball: string; files: string[] }>;
  project(name: string, tarball: string, dir: string): Promise<Project>;
  publint(tarball: string): Promise<Step>;
  attw(tarball: string): Promise<Step>;
  testOnlyFiles(files: string[]): string[];
  fixtureNames(): string[];
}
const smoke = (await import(
  pathToFileURL(join(import.meta.dirname, '..', '..', 'scripts', 'smoke', 'smoke.mjs')).href
)) as Smoke;

/** What a step printed, for a failure's message. */
const said = (step: Step | undefined): string =>
  step ? `${step.command} exited ${step.code}\n${step.stdout}${step.stderr}` : 'not run';

describe('the package, installed from its tarball', () => {
  const { dir, cleanup } = smoke.workspace();
  let files: string[] = [];
  let lint: Step;
  let types: Step;
  const projects = new Map<string, Project>();

  beforeAll(async () => {
    const packed = await smoke.pack(dir);
    files = packed.files;
    const names = Object.keys(smoke.PROJECTS);
    const [l, t, ...done] = await Promise.all([
      smoke.publint(packed.tarball),
      smoke.attw(packed.tarball),
      ...names.map((name) => smoke.project(name, packed.tarball, dir)),
    ]);
    [lint, types] = [l, t];
    for (const p of done) projects.set(p.name, p);
  }, 600_000);
  afterAll(() => cleanup());

  it('ships the build, its declarations, the require() stubs, README, LICENSE and CHANGELOG, and no source maps', () => {
    for (const file of [
      'package.json',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/testing.js',
      'dist/testing.d.ts',
      'dist/adapter.js',
      'dist/adapter.d.ts',
      'dist/brokers/kafka/index.js',
      'dist/brokers/kafka/index.d.ts',
      'dist/require/index.cjs',
      'dist/require/index.d.cts',
      'dist/require/testing.cjs',
      'dist/require/testing.d.cts',
      'dist/require/adapter.cjs',
      'dist/require/adapter.d.cts',
      'dist/require/kafka.cjs',
      'dist/require/kafka.d.cts',
    ]) {
      expect(files).toContain(file);
    }
    expect(
      files.filter(
        (f) => !f.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md'].includes(f),
      ),
    ).toEqual([]);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
  });

  it("ships no test-only module (the simulator's fault switches, test files, fixtures)", () => {
    expect(smoke.testOnlyFiles(files)).toEqual([]);
  });

  it('has a fixture project for each smoke project', () => {
    expect(smoke.fixtureNames()).toEqual(Object.keys(smoke.PROJECTS).sort());
  });

  it.each([
    ['esm', 'plain JavaScript, ES modules, without kafkajs; sluice/testing and sluice/adapter'],
    ['cjs', "CommonJS: require('sluice'), require() of each subpath, with kafkajs"],
    ['ts-nodenext', 'TypeScript, module nodenext, experimentalDecorators, declarations type-checked'],
    ['ts-standard', 'TypeScript, standard decorators'],
    ['ts-bundler', 'TypeScript, moduleResolution bundler'],
  ])('%s (%s) installs, builds and runs a subscriber on the MemoryBroker', (name) => {
    const p = projects.get(name)!;
    expect(p.install.code, said(p.install)).toBe(0);
    if (p.build) expect(p.build.code, said(p.build)).toBe(0);
    expect(p.start?.code, said(p.start)).toBe(0);
    expect(p.start!.stderr).toBe(''); // no warning either (require(esm) of a package under node_modules is quiet)
    expect(p.start!.stdout).toBe(p.expected);
    if (p.emitted !== undefined) expect(p.emitted, 'TypeScript emitted standard decorators (__esDecorate)').toBe(true);
  });

  it('passes publint --strict', () => {
    expect(lint.code, said(lint)).toBe(0);
  });

  it('passes arethetypeswrong, profile node16 (ESM, and require(esm) from CommonJS; not node10)', () => {
    expect(types.code, said(types)).toBe(0);
  });
});
