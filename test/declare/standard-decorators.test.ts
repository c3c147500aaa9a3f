import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The rest of the suite is compiled with experimentalDecorators (as tsconfig.json says). Here TypeScript
// compiles a module without it, as a project that never turned it on would: @subscriber then gets standard
// (TC39) decorator calls, (method, context), and reflect-metadata plays no part. It imports the built package.
const dist = pathToFileURL(join(import.meta.dirname, '..', '..', 'dist', 'index.js')).href;
const source = `
import { App, ManualClock, MemoryBroker, silentLogger, subscriber } from '${dist}';

class Refunds {
  paid: string[] = [];

  @subscriber('refunds', { workers: 2, byKey: true })
  async refund(r: { id: string }, ctx: { message: { key?: string } }) {
    this.paid.push(r.id + '@' + ctx.message.key);
  }
}

export async function serve(): Promise<string[]> {
  const broker = new MemoryBroker();
  const refunds = new Refunds();
  const app = new App({ name: 'std', logger: silentLogger, clock: new ManualClock() }).withBroker(broker, (b) => b.include(refunds));
  await app.start();
  await broker.publish('refunds', { id: 'r1' }, { key: 'cust-1' });
  await broker.publish('refunds', { id: 'r2' }, { key: 'cust-2' });
  await app.idle();
  await app.stop();
  return refunds.paid.sort();
}

export function declareBad(): unknown {
  class Bad {
    @subscriber('orders', { workers: 0 })
    bill() {}
  }
  return Bad;
}
`;

async function compiled(): Promise<{ code: string; serve: () => Promise<string[]>; declareBad: () => unknown }> {
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, experimentalDecorators: false },
  });
  const file = join(mkdtempSync(join(tmpdir(), 'sluice-std-')), 'std.mjs');
  writeFileSync(file, outputText);
  return {
    code: outputText,
    ...((await import(pathToFileURL(file).href)) as { serve: () => Promise<string[]>; declareBad: () => unknown }),
  };
}

describe('@subscriber as a standard decorator', () => {
  it('mounts and serves a class compiled without experimentalDecorators, its handler bound to the instance', async () => {
    const m = await compiled();
    expect(m.code).toContain('__esDecorate'); // TypeScript's standard-decorator helper, not the legacy __decorate
    expect(await m.serve()).toEqual(['r1@cust-1', 'r2@cust-2']);
  });

  it('refuses invalid options when the class is declared, naming the method, the field and the value', async () => {
    const m = await compiled();
    expect(() => m.declareBad()).toThrow(
      expect.objectContaining({
        code: 'WORKERS_INVALID',
        message: expect.stringMatching(/"bill".*orders.*workers.*got 0/s),
      }),
    );
  });
});
