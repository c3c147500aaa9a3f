/**
 * Damage to a file store at rest — a file deleted, emptied, zeroed or cut while no process had it open — is
 * refused with STORE_CORRUPT naming what is missing, and nothing on disk is changed by the refusal; a first
 * open that failed half-way (a full disk) is not taken for damage.
 */
import { promises as fs, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { App, ManualClock, MemoryBroker, fileStore, silentLogger, subscriber } from '../../src/index.js';
import { encodeFrame } from '../../src/store/frame.js';
import { nodeFileSystem, type FileSystem } from '../../src/store/fs.js';

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'sluice-damage-'));
const open = async (dir: string, shards = 1, fsys: FileSystem = nodeFileSystem) => {
  const store = fileStore({ dir, shards, segmentBytes: 1024, fs: fsys });
  await store.open();
  return store;
};

/** 300 records in segments of 1 KiB, a snapshot at LSN 250 (the segments it covers deleted), 50 more; closed. */
async function storeWithSnapshot(): Promise<{ dir: string; shard: string; segments: string[] }> {
  const dir = tmp();
  const store = await open(dir);
  for (let i = 0; i < 300; i += 10)
    await Promise.all(Array.from({ length: 10 }, (_, j) => store.log(0).append(Buffer.from(`record-${i + j}`))));
  await store.log(0).writeSnapshot(250, Buffer.from('state@250'));
  for (let i = 300; i < 350; i += 10)
    await Promise.all(Array.from({ length: 10 }, (_, j) => store.log(0).append(Buffer.from(`record-${i + j}`))));
  await store.close();
  const shard = path.join(dir, 'shard-0');
  const segments = (await fs.readdir(shard))
    .filter((f) => f.endsWith('.seg'))
    .sort()
    .map((f) => path.join(shard, f));
  expect(segments.length).toBeGreaterThan(2);
  return { dir, shard, segments };
}

/** Every file of the store under `dir` with its bytes (not LOCK, which only names a holder): to show that a refused open changed nothing. */
async function files(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && !entry.name.startsWith('LOCK'))
      out[path.relative(dir, path.join(entry.parentPath, entry.name))] = (
        await fs.readFile(path.join(entry.parentPath, entry.name))
      ).toString('base64');
  }
  return out;
}

async function expectRefused(dir: string, message: RegExp, shards = 1): Promise<void> {
  const before = await files(dir);
  const error = await open(dir, shards).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ code: 'STORE_CORRUPT', message: expect.stringMatching(message) });
  expect((error as Error).message).toMatch(/restore|Write the number|move it aside/); // says what to do
  expect(await files(dir)).toEqual(before);
}

describe('file store damaged at rest', () => {
  it('opens the undamaged store with every record after the snapshot', async () => {
    const { dir } = await storeWithSnapshot();
    const store = await open(dir);
    const lsns: number[] = [];
    await store.log(0).replay(251, (lsn) => lsns.push(lsn));
    expect(lsns).toEqual(Array.from({ length: 100 }, (_, i) => 251 + i));
    await store.close();
  });

  it('refuses a store whose snapshot was deleted', async () => {
    const { dir, shard } = await storeWithSnapshot();
    await fs.rm(path.join(shard, 'snapshot'));
    await expectRefused(dir, /shard-0: its snapshot \(of the records up to LSN 250\) is missing/);
  });

  it('refuses a store whose oldest segment was deleted', async () => {
    const { dir, segments } = await storeWithSnapshot();
    await fs.rm(segments[0]!);
    await expectRefused(
      dir,
      /records 251 to \d+ are missing: the snapshot ends at LSN 250, and the oldest segment, \d+\.seg, starts at LSN \d+/,
    );
  });

  it('refuses a store with a segment deleted from the middle', async () => {
    const { dir, segments } = await storeWithSnapshot();
    await fs.rm(segments[1]!);
    await expectRefused(
      dir,
      /starts at LSN \d+, but the one before it ends at LSN \d+: records \d+ to \d+ are missing/,
    );
  });

  it('refuses a store whose newest segment was deleted', async () => {
    const { dir, segments } = await storeWithSnapshot();
    await fs.rm(segments.at(-1)!);
    await expectRefused(dir, /its newest segment, \d+\.seg, is missing/);
  });

  it.each([
    ['zeroed', (size: number) => Buffer.alloc(size), /segment \d+\.seg has no header: it was zeroed or overwritten/],
    ['emptied', () => Buffer.alloc(0), /segment \d+\.seg has no header: it was emptied/],
    [
      'cut by one record',
      null,
      /records \d+ to 350 are missing: they were durable, but the newest segment, \d+\.seg, ends at LSN \d+/,
    ],
  ])('refuses a store whose newest segment was %s', async (_what, bytes, message) => {
    const { dir, segments } = await storeWithSnapshot();
    const file = segments.at(-1)!;
    const { size } = await fs.stat(file);
    if (bytes) await fs.writeFile(file, bytes(size));
    else await fs.truncate(file, size - 5);
    await expectRefused(dir, message);
  });

  it.each([
    ['zeroed', (size: number) => Buffer.alloc(size)],
    ['emptied', () => Buffer.alloc(0)],
  ])(
    'refuses a store whose newest segment was %s after its process was killed (no clean close)',
    async (_what, bytes) => {
      const dir = tmp();
      const killed = fileStore({
        dir,
        shards: 1,
        segmentBytes: 1024,
        fs: { ...nodeFileSystem, lock: async () => ({ release: async () => {} }) },
      });
      await killed.open();
      for (let i = 0; i < 100; i += 10)
        await Promise.all(Array.from({ length: 10 }, (_, j) => killed.log(0).append(Buffer.from(`record-${i + j}`))));
      // never closed: the manifest knows only what a segment's creation and the open wrote
      const shard = path.join(dir, 'shard-0');
      const newest = path.join(
        shard,
        (await fs.readdir(shard))
          .filter((f) => f.endsWith('.seg'))
          .sort()
          .at(-1)!,
      );
      await fs.writeFile(newest, bytes((await fs.stat(newest)).size));
      await expectRefused(dir, /has no header/);
    },
  );

  it('refuses a store whose segments were all deleted, the snapshot kept', async () => {
    const { dir, segments } = await storeWithSnapshot();
    for (const s of segments) await fs.rm(s);
    await expectRefused(dir, /segment.* is missing/);
  });

  it('refuses a store whose MANIFEST or shard directory was deleted', async () => {
    const a = await storeWithSnapshot();
    await fs.rm(path.join(a.shard, 'MANIFEST'));
    await expectRefused(a.dir, /shard-0: its MANIFEST is missing/);
    const b = await storeWithSnapshot();
    await fs.writeFile(path.join(b.shard, 'MANIFEST'), '');
    await expectRefused(b.dir, /shard-0: its MANIFEST is damaged/);
    const c = await storeWithSnapshot();
    await fs.rm(c.shard, { recursive: true });
    await expectRefused(c.dir, /shard-0: the shard directory is missing/);
  });

  it('refuses a damaged last record of a segment that a newer segment follows, even with no record in the newer one', async () => {
    const dir = tmp();
    const killed = fileStore({
      dir,
      shards: 1,
      segmentBytes: 1024,
      fs: { ...nodeFileSystem, lock: async () => ({ release: async () => {} }) },
    });
    await killed.open();
    for (let i = 0; i < 100; i += 10)
      await Promise.all(Array.from({ length: 10 }, (_, j) => killed.log(0).append(Buffer.from(`record-${i + j}`))));
    const shard = path.join(dir, 'shard-0');
    const segments = (await fs.readdir(shard))
      .filter((f) => f.endsWith('.seg'))
      .sort()
      .map((f) => path.join(shard, f));
    await fs.truncate(segments.at(-1)!, 16); // as if the process died right after making it: its header only
    const previous = await fs.readFile(segments.at(-2)!);
    previous[previous.length - 3]! ^= 0x10; // inside its last record
    await fs.writeFile(segments.at(-2)!, previous);
    await expectRefused(
      dir,
      /bad record at byte \d+ of \d+\.seg \(LSN \d+\), which was durable: segment \d+\.seg was made after it/,
    );
  });

  it('refuses a store made before manifests and segment headers, saying so', async () => {
    const dir = tmp();
    await fs.mkdir(path.join(dir, 'shard-0'), { recursive: true });
    await fs.writeFile(path.join(dir, 'SHARDS'), '1');
    await fs.writeFile(path.join(dir, 'shard-0', '00000000000000000001.seg'), encodeFrame(1, Buffer.from('old')));
    await expectRefused(dir, /was made by an earlier version of Sluice, whose files this version does not read/);
  });

  it('refuses a store whose SHARDS file was deleted or emptied while its shards hold records', async () => {
    const a = await storeWithSnapshot();
    await fs.rm(path.join(a.dir, 'SHARDS'));
    await expectRefused(a.dir, /its SHARDS file is missing, but shard-0 hold records. Write the number of shards/);
    const b = await storeWithSnapshot();
    await fs.writeFile(path.join(b.dir, 'SHARDS'), '');
    await expectRefused(b.dir, /its SHARDS file is damaged \(it reads ""\)/);
  });

  it('opens a store whose first open failed on a full disk', async () => {
    const dir = tmp();
    // The disk fills up as SHARDS is written.
    const full: FileSystem = {
      ...nodeFileSystem,
      open: async (file, flag) => {
        const handle = await nodeFileSystem.open(file, flag);
        if (!path.basename(file).startsWith('SHARDS')) return handle;
        return {
          ...handle,
          writeFile: async () =>
            Promise.reject(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' })),
          close: () => handle.close(),
        };
      },
    };
    await expect(open(dir, 2, full)).rejects.toMatchObject({ code: 'ENOSPC' });
    const store = await open(dir, 2); // space again: the store is made, not refused
    expect(await store.log(1).append(Buffer.from('a'))).toBe(1);
    await store.close();
    expect((await fs.readFile(path.join(dir, 'SHARDS'), 'utf8')).trim()).toBe('2');
    // An empty SHARDS left by an earlier version's first open on a full disk, before any record: made again.
    const old = tmp();
    await fs.writeFile(path.join(old, 'SHARDS'), '');
    await (await open(old, 2)).close();
    expect((await fs.readFile(path.join(old, 'SHARDS'), 'utf8')).trim()).toBe('2');
  });

  it('refuses to start an app whose store lost every segment but kept its snapshot', async () => {
    const dir = tmp();
    const app = () =>
      new App({
        name: 'damage',
        logger: silentLogger,
        clock: new ManualClock(1_700_000_000_000),
        store: fileStore({ dir, shards: 1, segmentBytes: 1024, snapshotEvery: 50 }),
      }).withBroker(new MemoryBroker(), (r) =>
        r.include(
          subscriber('t', () => undefined)
            .name('p')
            .pace({ batch: { max: 1000, wait: 60_000 } })
            .build(),
        ),
      );
    const first = app();
    await first.start();
    for (let i = 0; i < 200; i++) await first.send('p', { key: `k${i % 7}`, event: i });
    await first.stop();
    const shard = path.join(dir, 'shard-0');
    expect(await fs.readdir(shard)).toContain('snapshot');
    for (const f of await fs.readdir(shard)) if (f.endsWith('.seg')) await fs.rm(path.join(shard, f));
    await expect(app().start()).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
  });
});
