// A worker touches hundreds of MiB of fresh memory per large merge (Arrow columns,
// hash tables, Lance's buffers), and glibc hands most of it back to the kernel between
// merges: on these machines a merge of 10 x 100k rows took ~50,000 minor page faults in
// the worker, ~4-15 us each. Three glibc malloc tunables (glibc reads them when a process
// starts, so they belong in the environment of whatever launches workers; the project's
// own launchers set them, README "Running workers" tells operators to; elsewhere they
// are ignored):
// - mmap_threshold=32 MiB (glibc's largest dynamic value, fixed from the start) and
//   trim_threshold=64 MiB (what glibc's own dynamic rule would reach after a 32 MiB
//   free): buffers up to 32 MiB come from malloc's arenas and freed memory stays there
//   for the next merge, instead of each large buffer being its own mmap whose munmap
//   makes every thread of the process flush its TLB. Lance's threads took ~77% of the
//   worker's page faults during a merge. With a 512 MiB trim threshold: worker CPU -9%,
//   A -6% (2 x 5 x 100k, 7 interleaved pairs; bench/README.md), but the
//   kept memory raised fleet-memory's peak RSS from ~1.1 to 1.26-1.33 GiB for a 1 GiB
//   budget (its bound is budget + idle baseline, ~1.4 GiB); with 64 MiB it stayed at
//   1.11-1.12 GiB, and a C check of malloc + touch + free of 1-31 MiB buffers faults 548
//   times (561 with 512 MiB, 4,831 with hugetlb alone, 53,159 with nothing).
// - arena_max=1: one arena for every thread. A merge's memory changes hands between
//   threads: the main thread reads and encodes a batch and frees it, then Lance's
//   threads allocate as much for the upsert. With an arena per thread (glibc's default,
//   up to 8 per core) what one thread freed is fresh memory to the other; with one arena
//   Lance reuses what the preparation gave back. Cold merges took a third fewer page
//   faults and ~50 MiB less peak RSS, and 3,000-seal runs of many small merges took as
//   much CPU within their noise (bench/README.md, "Merge throughput"): allocations under
//   ~1 KiB come from per-thread caches without the arena's lock, and on 2 cores a worker
//   has few busy threads (docs/operations.md says what to check on larger hosts).
// Not `hugetlb=1` (transparent huge pages for malloc): it halves the page faults,
// but each fault then zeroes 2 MiB of memory the VM may never have touched, and on these machines touching a
// fresh 16 MiB buffer took 100-190 ms with it against 13 ms without; a cold merge of
// 2 x 4 x 150k rows took the worker 1.61 / 1.35 / 1.42 s with it and 1.16 / 0.95 /
// 1.18 s without (interleaved, bench/README.md). An operator whose hosts do better can
// still set it: a tunable already in the environment is kept.

export const WORKER_MALLOC_TUNABLES = ['glibc.malloc.mmap_threshold=33554432', 'glibc.malloc.trim_threshold=67108864', 'glibc.malloc.arena_max=1'] as const;

/** `env` with the worker's malloc tunables added; a tunable the operator already set keeps their value. */
export function withWorkerMalloc(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const t = env.GLIBC_TUNABLES;
  const missing = WORKER_MALLOC_TUNABLES.filter((kv) => !t?.split(':').some((set) => set.startsWith(`${kv.split('=')[0]}=`)));
  if (missing.length === 0) return env;
  return { ...env, GLIBC_TUNABLES: [t, ...missing].filter(Boolean).join(':') };
}
