// A worker touches hundreds of MiB of fresh memory per large merge (Arrow columns,
// hash tables, Lance's buffers), and glibc hands most of it back to the kernel between
// merges: on these machines a merge of 10 x 100k rows took ~50,000 minor page faults in
// the worker, ~4 us each. With transparent huge pages for malloc (glibc >= 2.35, THP in
// "madvise" or "always" mode) one fault maps 2 MiB instead of 4 KiB: half the faults and
// ~10% less worker CPU (bench/README.md). glibc reads its tunables when a process
// starts, so the setting belongs in the environment of whatever launches workers; the
// project's own launchers (npm start, the benches) set it, and README "Running workers"
// tells operators to. Elsewhere it is ignored.

export const HUGE_PAGE_MALLOC = 'glibc.malloc.hugetlb=1';

/** `env` with glibc's huge-page malloc tunable added, unless the operator already chose a value. */
export function withHugePageMalloc(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const t = env.GLIBC_TUNABLES;
  if (t?.includes('glibc.malloc.hugetlb')) return env;
  return { ...env, GLIBC_TUNABLES: t ? `${t}:${HUGE_PAGE_MALLOC}` : HUGE_PAGE_MALLOC };
}
