// Messages between a worker and its dedup threads (dedup-threads.ts, dedup-thread.ts).

export type DedupRequest =
  /** Verify, decode, validate and add one file's bytes (shared memory) to the job's dedup; `verified`: its checksum was checked already. */
  | { op: 'add'; job: number; key: string; expectedSources: number; file: string; seq: number | null; bytes: Uint8Array; verified: boolean }
  /** The winners so far, encoded as a checksummed IPC file in memory handed over (transferred). */
  | { op: 'build'; job: number }
  /** Forget the job. */
  | { op: 'end'; job: number }
  /** Run `rows` made-up rows through every step once (dedup-threads.ts start()). */
  | { op: 'warm-up'; rows: number };

export type DedupReply =
  | { kind: 'added'; rowsRead: number; verifyMs: number; dedupeMs: number }
  /** No embedded checksum: the worker checks the file's legacy sidecar and sends it again as verified. */
  | { kind: 'no-checksum' }
  | { kind: 'corrupt'; reason: string }
  | { kind: 'invalid'; problem: string }
  | { kind: 'built'; ipc: Uint8Array | null; rows: number; dedupeMs: number; encodeMs: number }
  | { kind: 'ended' }
  | { kind: 'error'; message: string };
