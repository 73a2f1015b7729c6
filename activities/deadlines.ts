// Deadlines an opaque commit step declares for itself. Generous on purpose: they bound
// a HUNG call, they are not performance targets. From measurements (lance-node-facts):
// 1M rows merged into 1M in 1.8-2.9 s, compaction of similar size in seconds.

export const mergeDeadlineMs = (rows: number): number => 30_000 + Math.ceil(rows / 20_000) * 1000;
export const optimizeDeadlineMs = (tableRows: number): number => 60_000 + Math.ceil(tableRows / 50_000) * 1000;
export const indexDeadlineMs = (tableRows: number, type: string): number =>
  (type.startsWith('ivf') ? 120_000 : 30_000) + Math.ceil(tableRows / 10_000) * 1000;
