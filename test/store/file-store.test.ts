import { promises as fs, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError, fileStore, memoryStore, shardOf, type Store } from '../../src/index.js';
import { nodeFileSystem, type FileSystem } from '../../src/store/fs.js';

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'sluice-store-'));
const text = (r: Uint8Array) => Buffer.from(r).toString();

async function contents(store: Store, shard = 0): Promise<string[]> {
  const out: string[] = [];
  await store.log(shard).replay(1, (_lsn, r) => out.push(text(r)));
  return out;
}

/** The real disk without the lock: a store left open is as a crashed process leaves it, and another can open. */
const crashable: FileSystem = { ...nodeFileSystem, lock: async () => ({ release: async () => {} }) };

/** Appends `n` records; with `crash`, the store is left as a killed process leaves it (no close). */
async function writeRecords(dir: string, n: number, segmentBytes = 1024, crash = false): Promise<void> {
  const store = fileStore({ dir, shards: 1, segmentBytes, fs: crash ? crashable : nodeFileSystem });
  await store.open();
  // In groups of ten: each group shares one write and fsync (group commit); a segment rolls between groups.
  for (let i = 0; i < n; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, n - i) }, (_, j) => store.log(0).append(Buffer.from(`record-${i + j}`))),
    );
  }
  if (!crash) await store.close();
}

async function segmentFiles(dir: string): Promise<string[]> {
  const d = path.join(dir, 'shard-0');
  return (await fs.readdir(d))
    .filter((f) => f.endsWith('.seg'))
    .sort()
    .map((f) => path.join(d, f));
}

const reopen = async (dir: string, segmentBytes = 1024) => {
  const store = fileStore({ dir, shards: 1, segmentBytes });
  await store.open();
  return store;
};

describe('fileStore', () => {
  it('rolls segments and replays across them', async () => {
    const dir = tmp();
    await writeRecords(dir, 300, 1024);
    expect((await segmentFiles(dir)).length).toBeGreaterThan(3);
    const store = await reopen(dir);
    expect(await contents(store)).toEqual(Array.from({ length: 300 }, (_, i) => `record-${i}`));
    await store.close();
  });

  it('cuts a torn tail (a record half written when the process died) and goes on from there', async () => {
    const dir = tmp();
    await writeRecords(dir, 10, 1 << 20, true);
    const [file] = await segmentFiles(dir);
    const { size } = await fs.stat(file!);
    await fs.truncate(file!, size - 5);
    const store = await reopen(dir, 1 << 20);
    expect(await contents(store)).toEqual(Array.from({ length: 9 }, (_, i) => `record-${i}`));
    expect(await store.log(0).append(Buffer.from('next'))).toBe(10);
    await store.close();
  });

  it('cuts a zero-filled tail', async () => {
    const dir = tmp();
    await writeRecords(dir, 10, 1 << 20, true);
    const [file] = await segmentFiles(dir);
    await fs.appendFile(file!, Buffer.alloc(4096));
    const store = await reopen(dir, 1 << 20);
    expect((await contents(store)).length).toBe(10);
    await store.close();
  });

  it('refuses a flipped bit followed by good records with STORE_CORRUPT, and changes nothing', async () => {
    const dir = tmp();
    await writeRecords(dir, 10, 1 << 20);
    const [file] = await segmentFiles(dir);
    const bytes = await fs.readFile(file!);
    bytes[40] = bytes[40]! ^ 0x01; // inside the second record
    await fs.writeFile(file!, bytes);
    await expect(reopen(dir, 1 << 20)).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    expect((await fs.readFile(file!)).equals(bytes)).toBe(true);
  });

  it('refuses a damaged segment that later segments follow', async () => {
    const dir = tmp();
    await writeRecords(dir, 200, 1024);
    const [first] = await segmentFiles(dir);
    const { size } = await fs.stat(first!);
    await fs.truncate(first!, size - 3);
    await expect(reopen(dir)).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
  });

  it('refuses a flipped bit in the last record of a segment whose next segment holds only a torn first write', async () => {
    // The next segment was made once every record before it was durable: damage to the last record before
    // it is damage to an acknowledged record, not a torn tail to cut off.
    const dir = tmp();
    await writeRecords(dir, 200, 1024);
    const [first, second, ...rest] = await segmentFiles(dir);
    for (const f of rest) await fs.rm(f);
    await fs.writeFile(second!, (await fs.readFile(second!)).subarray(0, 9)); // its first write tore after 9 bytes
    const bytes = await fs.readFile(first!);
    bytes[bytes.length - 2] = bytes[bytes.length - 2]! ^ 0x10; // in the last record's payload
    await fs.writeFile(first!, bytes);
    await expect(reopen(dir)).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    expect((await fs.readFile(first!)).equals(bytes)).toBe(true); // nothing changed
    expect((await segmentFiles(dir)).length).toBe(2);
  });

  it('lets one store at a time open a directory in this process, and lets it go when an open fails', async () => {
    const dir = tmp();
    const store = fileStore({ dir, shards: 1 });
    await store.open();
    await expect(fileStore({ dir, shards: 1 }).open()).rejects.toThrow(/already open in this process/);
    await store.close();
    await expect(fileStore({ dir, shards: 2 }).open()).rejects.toThrow(/made with 1 shards/);
    const again = fileStore({ dir, shards: 1 }); // the failed open let the lock go
    await again.open();
    await again.close();
  });

  it.each([
    ['a dead process', '999999999'],
    ['this very pid, from an earlier life (PID 1 in a restarted container)', String(process.pid)],
    ['a live process that is not a store (init)', '1'],
    ['nobody (an empty file)', ''],
  ])('opens a store whose LOCK file names %s: the file is no lock', async (_what, pid) => {
    const dir = tmp();
    await (await reopen(dir)).close();
    await fs.writeFile(path.join(dir, 'LOCK'), pid);
    const store = await reopen(dir);
    expect((await fs.readFile(path.join(dir, 'LOCK'), 'utf8')).trim()).toBe(String(process.pid));
    await store.close();
  });

  it('refuses a directory made with another shard count', async () => {
    const dir = tmp();
    const store = fileStore({ dir, shards: 2 });
    await store.open();
    await store.close();
    await expect(fileStore({ dir, shards: 3 }).open()).rejects.toThrow(/made with 2 shards, got shards 3/);
  });

  it('treats a failed write as fatal: pending and later appends are refused, never retried', async () => {
    const dir = tmp();
    const fatal: unknown[] = [];
    const store = fileStore({ dir, shards: 1, onFatal: (e) => fatal.push(e) });
    await store.open();
    await store.log(0).append(Buffer.from('ok'));
    const log = store.log(0) as unknown as { handle: { close(): Promise<void> } };
    await log.handle.close(); // the next write fails
    await expect(store.log(0).append(Buffer.from('lost'))).rejects.toBeInstanceOf(SluiceError);
    expect(() => store.log(0).append(Buffer.from('after'))).toThrow(SluiceError); // refused at once: no LSN is given
    expect(fatal).toHaveLength(1);
  });

  it('refuses a record that is not bytes before giving it an LSN, so no gap is left', async () => {
    // (one too long: the shard log contract, test/contract/shard-log-contract.ts)
    const dir = tmp();
    const store = fileStore({ dir, shards: 1 });
    await store.open();
    expect(() => store.log(0).append(undefined as never)).toThrow(TypeError);
    expect(await store.log(0).append(Buffer.from('next'))).toBe(1);
    await store.close();
    const again = await reopen(dir);
    expect(await contents(again)).toEqual(['next']);
    await again.close();
  });

  it('keeps a snapshot atomically and deletes the segments it makes dead', async () => {
    const dir = tmp();
    await writeRecords(dir, 300, 1024);
    const before = await segmentFiles(dir);
    const store = await reopen(dir);
    await store.log(0).writeSnapshot(250, Buffer.from('state@250'));
    const after = await segmentFiles(dir);
    expect(after.length).toBeLessThan(before.length);
    expect(after.at(-1)).toBe(before.at(-1)); // the segment being written stays
    const snap = await store.log(0).readSnapshot();
    expect({ lsn: snap!.lsn, state: text(snap!.state) }).toEqual({ lsn: 250, state: 'state@250' });
    await store.close();
    const again = await reopen(dir);
    const rest: number[] = [];
    await again.log(0).replay(251, (lsn) => rest.push(lsn));
    expect(rest).toEqual(Array.from({ length: 50 }, (_, i) => 251 + i)); // everything after the snapshot is still there
    expect(await again.log(0).append(Buffer.from('x'))).toBe(301);
    await expect(again.log(0).writeSnapshot(400, Buffer.from('too soon'))).rejects.toThrow(/not durable/);
    await again.close();
    const file = path.join(dir, 'shard-0', 'snapshot');
    const bytes = await fs.readFile(file);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
    await fs.writeFile(file, bytes);
    await expect(reopen(dir)).rejects.toMatchObject({
      code: 'STORE_CORRUPT',
      message: expect.stringMatching(/the snapshot is damaged/),
    });
  });

  it('checks its settings', () => {
    expect(() => fileStore({ dir: tmp(), shards: 0 })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(() => fileStore({ dir: tmp(), segmentBytes: 10 })).toThrow(/segmentBytes/);
  });
});

describe('memoryStore', () => {
  it('keeps through a crash exactly what was durable', async () => {
    const store = memoryStore({ shards: 1 });
    await store.log(0).append(Buffer.from('a'));
    const pending = store.log(0).append(Buffer.from('b')); // not yet committed
    const after = store.crash();
    expect(await contents(after)).toEqual(['a']);
    let resolved = false;
    void pending.then(() => (resolved = true));
    await new Promise((r) => setImmediate(r));
    expect(resolved).toBe(false); // the crashed process never heard back
    expect(await after.log(0).append(Buffer.from('c'))).toBe(2);
  });
});

describe('shardOf', () => {
  it('is stable and spreads keys', () => {
    expect(shardOf('cust-7', 4)).toBe(shardOf('cust-7', 4));
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[shardOf(`k${i}`, 4)]!++;
    expect(Math.min(...counts)).toBeGreaterThan(800);
    expect(shardOf('a', 1 << 30)).toBe(0xe40c292c % (1 << 30)); // FNV-1a's published vector for "a"
  });
});
