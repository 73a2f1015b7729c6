import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withWorkerMalloc, WORKER_MALLOC_TUNABLES } from '../../src/worker/allocator-env';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { warmUpMergePath } from '../../src/worker/warm-up';
import { warmUpPreparationHere } from '../../activities/warm-up-preparation';

const warmUpDirs = () => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('turnstile-warm-up-'));

describe('worker start', () => {
  it('warms the merge path with a real Lance table and leaves nothing behind', async () => {
    const before = new Set(warmUpDirs());
    // Created (version 1) and merged twice.
    expect(await warmUpMergePath()).toBe(3);
    // Another test file may be warming up at the same moment: only this call's leftovers count.
    expect(warmUpDirs().filter((n) => !before.has(n))).toEqual([]);
  });

  it('prepares two overlapping made-up generations through the checks, the dedupe and the encode', async () => {
    // Keys 0..999 and 500..1499: 1,500 distinct keys, 500 of them in both.
    const { rows, bytes } = await warmUpPreparationHere(1000);
    expect(rows).toBe(1500);
    expect(bytes).toBeGreaterThan(1500 * 8);
  });

  it('adds the worker malloc tunables to the environment, keeping each one the operator set', () => {
    const all = 'glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864:glibc.malloc.arena_max=1';
    expect(withWorkerMalloc({}).GLIBC_TUNABLES).toBe(all);
    expect(withWorkerMalloc({ GLIBC_TUNABLES: 'glibc.malloc.tcache_count=16' }).GLIBC_TUNABLES).toBe(`glibc.malloc.tcache_count=16:${all}`);
    expect(withWorkerMalloc({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' }).GLIBC_TUNABLES).toBe('glibc.malloc.arena_max=4:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864');
    // Huge pages are not among them (slower on these VMs), but one the operator asks for is kept.
    expect(withWorkerMalloc({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' }).GLIBC_TUNABLES).toBe(`glibc.malloc.hugetlb=1:${all}`);
    expect(withWorkerMalloc({ GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=1:glibc.malloc.mmap_threshold=2:glibc.malloc.arena_max=3:glibc.malloc.hugetlb=0' }).GLIBC_TUNABLES).toBe('glibc.malloc.trim_threshold=1:glibc.malloc.mmap_threshold=2:glibc.malloc.arena_max=3:glibc.malloc.hugetlb=0');
  });

  it('npm start sets the same tunables (scripts/bootstrap.mjs runs before anything is built, so it repeats the list)', () => {
    const text = fs.readFileSync(path.join(PROJECT_ROOT, 'scripts', 'bootstrap.mjs'), 'utf8');
    const listed = /const want = \[([^\]]*)\]/.exec(text)?.[1];
    expect(listed && JSON.parse(`[${listed.replaceAll("'", '"')}]`)).toEqual([...WORKER_MALLOC_TUNABLES]);
  });
});
