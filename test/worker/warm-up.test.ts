import fs from 'node:fs';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { withWorkerMalloc } from '../../src/worker/allocator-env';
import { warmUpMergePath } from '../../src/worker/warm-up';

const warmUpDirs = () => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('turnstile-warm-up-'));

describe('worker start', () => {
  it('warms the merge path with a real Lance table and leaves nothing behind', async () => {
    const before = new Set(warmUpDirs());
    // Created (version 1) and merged twice.
    expect(await warmUpMergePath()).toBe(3);
    // Another test file may be warming up at the same moment: only this call's leftovers count.
    expect(warmUpDirs().filter((n) => !before.has(n))).toEqual([]);
  });

  it('adds the worker malloc tunables to the environment, keeping each one the operator set', () => {
    const all = 'glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864';
    expect(withWorkerMalloc({}).GLIBC_TUNABLES).toBe(all);
    expect(withWorkerMalloc({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }).GLIBC_TUNABLES).toBe(`glibc.malloc.arena_max=2:${all}`);
    expect(withWorkerMalloc({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' }).GLIBC_TUNABLES).toBe('glibc.malloc.hugetlb=0:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864');
    expect(withWorkerMalloc({ GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=1:glibc.malloc.mmap_threshold=2:glibc.malloc.hugetlb=0' }).GLIBC_TUNABLES).toBe('glibc.malloc.trim_threshold=1:glibc.malloc.mmap_threshold=2:glibc.malloc.hugetlb=0');
  });
});
