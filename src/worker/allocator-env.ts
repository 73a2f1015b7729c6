// A worker touches hundreds of MiB of fresh memory per large merge (Arrow columns,
// hash tables, Lance's buffers), and glibc hands most of it back to the kernel between
// merges: on these machines a merge of 10 x 100k rows took ~50,000 minor page faults in
// the worker, ~4 us each. Three glibc malloc tunables (glibc reads them when a process
// starts, so they belong in the environment of whatever launches workers; the project's
// own launchers set them, README "Running workers" tells operators to; elsewhere they
// are ignored):
// - hugetlb=1: transparent huge pages for malloc (glibc >= 2.35, THP in "madvise" or
//   "always" mode): one fault maps 2 MiB instead of 4 KiB. Half the faults and ~10% less
//   worker CPU (bench/README.md, session 11).
// - mmap_threshold=32 MiB (glibc's largest dynamic value, fixed from the start) and
//   trim_threshold=64 MiB (what glibc's own dynamic rule would reach after a 32 MiB
//   free): buffers up to 32 MiB come from malloc's arenas and freed memory stays there
//   for the next merge, instead of each large buffer being its own mmap whose munmap
//   makes every thread of the process flush its TLB. Lance's threads took ~77% of the
//   worker's page faults during a merge. With a 512 MiB trim threshold: worker CPU -9%,
//   A -6% (2 x 5 x 100k, 7 interleaved pairs; bench/README.md, session 13), but the
//   kept memory raised fleet-memory's peak RSS from ~1.1 to 1.26-1.33 GiB for a 1 GiB
//   budget (its bound is budget + idle baseline, ~1.4 GiB); with 64 MiB it stayed at
//   1.11-1.12 GiB, and a C check of malloc + touch + free of 1-31 MiB buffers faults 548
//   times (561 with 512 MiB, 4,831 with hugetlb alone, 53,159 with nothing).

export const WORKER_MALLOC_TUNABLES = ['glibc.malloc.hugetlb=1', 'glibc.malloc.mmap_threshold=33554432', 'glibc.malloc.trim_threshold=67108864'] as const;

/** `env` with the worker's malloc tunables added; a tunable the operator already set keeps their value. */
export function withWorkerMalloc(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const t = env.GLIBC_TUNABLES;
  const missing = WORKER_MALLOC_TUNABLES.filter((kv) => !t?.split(':').some((set) => set.startsWith(`${kv.split('=')[0]}=`)));
  if (missing.length === 0) return env;
  return { ...env, GLIBC_TUNABLES: [t, ...missing].filter(Boolean).join(':') };
}
