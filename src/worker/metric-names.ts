// Turnstile's own Prometheus metrics, named once: the workflow (workflows/metrics.ts)
// and the activities (activities/metrics.ts) emit them, the worker's runtime sets their
// histogram buckets (src/worker/runtime.ts), and the Grafana dashboard
// (docs/grafana-dashboard.json) queries them; its test checks it uses only names a real
// Prometheus scraped. Counters carry `_total` themselves (the exporter adds no suffix).

export const METRICS = {
  /** gauge {table}: sum over shards of sealed minus merged generations. */
  backlog: 'turnstile_backlog',
  /** gauge {table}: writePressure in [0, 1]. */
  writePressure: 'turnstile_write_pressure',
  /** gauge {table}: units waiting for the turn (the status queue's length). */
  queueLength: 'turnstile_queue_length',
  /** gauge {table}: bytes reserved by the table's units that are preparing or hold prepared batches. */
  reservedBytes: 'turnstile_reserved_bytes',
  /** gauge {table}: estimated seconds until backlog 0 (+Inf: never at current rates). */
  drainEtaSeconds: 'turnstile_drain_eta_seconds',
  /** histogram {table, kind}: seconds a unit waited from commit-ready to its turn. */
  turnWaitSeconds: 'turnstile_turn_wait_seconds',
  /** counter {table, kind}: turns granted. */
  turns: 'turnstile_turns_total',
  /** counter {table}: stalled units (no progress for stallSecs of their phase). */
  stalls: 'turnstile_stalls_total',
  /** counter {table}: retried preparations and commits. */
  retries: 'turnstile_retries_total',
  /** counter {table}: rows merged into the base table. */
  rowsMerged: 'turnstile_rows_merged_total',
  /** counter {table}: signals dropped by the table's checks or over its inbox bound (hostile or buggy clients). */
  rejectedSignals: 'turnstile_rejected_signals_total',
  /** counter {table}: adopted tables' commit attempts that lost a race with an outside writer. */
  commitConflicts: 'turnstile_commit_conflicts_total',
  /** gauge {table}: adopted tables' fragment count at the latest look. */
  fragments: 'turnstile_table_fragments',
  /** counter {table, kind, mode}: adopted tables' maintenance decisions (mode shadow: recorded only). */
  maintenanceDecisions: 'turnstile_maintenance_decisions_total',
  /** counter {table, kind}: bytes the kind's units wrote (prepared batches, table data and index files). */
  bytesRewritten: 'turnstile_bytes_rewritten_total',
  /** counter {table}: bytes writers reported for the generations they sealed. */
  sealedBytes: 'turnstile_sealed_bytes_total',
  /** gauge {table}: bytes written by all units per byte sealed, since the record began. */
  writeAmplification: 'turnstile_write_amplification',
  /** counter {table}: demand signals the store sweep sent for seals nobody had signalled (src/worker/store-sweeper.ts); a few each time a writer dies between seal and signal. */
  sweepTold: 'turnstile_store_sweep_told_total',
  /** histogram {activity_type, phase}: seconds an activity spent in each progress phase. */
  phaseSeconds: 'turnstile_phase_seconds',
} as const;

/** Bucket bounds (seconds) for the histograms: waits and phases run from milliseconds to minutes. */
export const SECONDS_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
