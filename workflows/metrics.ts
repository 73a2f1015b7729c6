import { metricMeter } from '@temporalio/workflow';
import { backlogOf } from '../src/policy';
import type { DrainEstimate } from '../src/policy';
import type { Counters, Decision, Kind, TableState } from '../src/policy/types';
import { METRICS } from '../src/worker/metric-names';
import { writeAmplification, type UnitHistory } from '../src/policy/unit-history';

// The table's Prometheus metrics, from the workflow's own metric meter: the SDK emits
// nothing while replaying, so a worker that picks a table up after a restart does not
// count its past turns again. Counters add what the state's counters gained since the
// previous activation of this run (state.counters are carried across continue-as-new,
// so the baseline is the state the run started with). Emitting is not a command: no
// history changes.

/** Created per run: the workflow's meter exists only inside a workflow (this module is also imported by clients for types). */
function instruments() {
  return {
    backlog: metricMeter.createGauge(METRICS.backlog, 'int', '', 'sealed but not yet merged generations, summed over shards'),
    pressure: metricMeter.createGauge(METRICS.writePressure, 'float', '', 'write pressure in [0, 1] published to writers'),
    queueLength: metricMeter.createGauge(METRICS.queueLength, 'int', '', 'units waiting for the write-turn'),
    reserved: metricMeter.createGauge(METRICS.reservedBytes, 'int', 'By', 'bytes reserved by units preparing or holding a prepared batch'),
    drainEta: metricMeter.createGauge(METRICS.drainEtaSeconds, 'float', 's', 'estimated seconds until backlog 0 (+Inf: never at current rates)'),
    turnWait: metricMeter.createHistogram(METRICS.turnWaitSeconds, 'float', 's', 'seconds from commit-ready to the turn, per kind'),
    turns: metricMeter.createCounter(METRICS.turns, '', 'turns granted, per kind'),
    stalls: metricMeter.createCounter(METRICS.stalls, '', 'units that stalled (no progress for stallSecs)'),
    retries: metricMeter.createCounter(METRICS.retries, '', 'retried preparations and commits'),
    rowsMerged: metricMeter.createCounter(METRICS.rowsMerged, '', 'rows merged into the base table'),
    rejectedSignals: metricMeter.createCounter(METRICS.rejectedSignals, '', 'signals dropped by the table checks or over the inbox bound'),
    conflicts: metricMeter.createCounter(METRICS.commitConflicts, '', 'adopted tables: commit attempts lost to an outside writer'),
    fragments: metricMeter.createGauge(METRICS.fragments, 'int', '', 'adopted tables: fragments at the latest look'),
    decisions: metricMeter.createCounter(METRICS.maintenanceDecisions, '', 'adopted tables: maintenance decided, per kind and mode (shadow: recorded only)'),
    rewritten: metricMeter.createCounter(METRICS.bytesRewritten, 'By', 'bytes written by units, per kind'),
    sealed: metricMeter.createCounter(METRICS.sealedBytes, 'By', 'bytes writers sealed'),
    amplification: metricMeter.createGauge(METRICS.writeAmplification, 'float', '', 'bytes written by all units per byte sealed'),
  };
}

/** One publisher per run, starting from the counters the run began with. */
export function createMetricsPublisher(start: TableState, startHistory: UnitHistory): (st: TableState, history: UnitHistory, decisions: Decision[], nowMs: number, drain: DrainEstimate) => void {
  const { backlog, pressure, queueLength, reserved, drainEta, turnWait, turns, stalls, retries, rowsMerged, rejectedSignals, conflicts, fragments, decisions: decided, rewritten, sealed, amplification } = instruments();
  let last: Counters = start.counters;
  let lastHistory = startHistory;
  // Counters appear once they are added to: 0 makes stalls and retries visible (and
  // the dashboard's panels non-empty) before the first one happens.
  for (const c of [stalls, retries, rowsMerged, rejectedSignals]) c.add(0, { table: start.table });
  if (start.adopted) conflicts.add(0, { table: start.table });
  sealed.add(0, { table: start.table });
  for (const kind of Object.keys(startHistory.totals) as Kind[]) rewritten.add(0, { table: start.table, kind });
  return (st, history, decisions, nowMs, drain) => {
    const tags = { table: st.table };
    backlog.set(backlogOf(st), tags);
    pressure.set(st.writePressure, tags);
    queueLength.set(st.units.filter((u) => u.state === 'ready' || u.state === 'backoff').length, tags);
    // Gauges take no negative values: never at current rates is +Inf; while still
    // measuring the last estimate stands.
    if (drain.state === 'never') drainEta.set(Infinity, tags);
    else if (drain.etaSecs !== null) drainEta.set(drain.etaSecs, tags);
    reserved.set(st.units.reduce((n, u) => n + (u.state === 'preparing' || u.state === 'ready' || u.state === 'committing' ? u.reservedBytes : 0), 0), tags);
    if (st.adopted?.observed) fragments.set(st.adopted.observed.fragments, tags);
    for (const d of decisions) {
      if (d.type !== 'commit') continue;
      if (st.adopted) decided.add(1, { ...tags, kind: d.unit.kind, mode: st.adopted.mode });
      for (const u of [d.unit, ...(d.riders ?? [])]) {
        if (u.readySinceMs !== null) turnWait.record(Math.max(0, nowMs - u.readySinceMs) / 1000, { ...tags, kind: u.kind });
      }
    }
    const c = st.counters;
    for (const kind of Object.keys(c.turns) as Kind[]) addDelta(turns, c.turns[kind] - last.turns[kind], { ...tags, kind });
    addDelta(stalls, c.stalls - last.stalls, tags);
    addDelta(retries, c.retries - last.retries, tags);
    addDelta(rowsMerged, c.rowsMerged - last.rowsMerged, tags);
    addDelta(rejectedSignals, (c.rejectedSignals ?? 0) - (last.rejectedSignals ?? 0), tags);
    addDelta(conflicts, (c.commitConflicts ?? 0) - (last.commitConflicts ?? 0), tags);
    last = c;
    for (const kind of Object.keys(history.totals) as Kind[]) addDelta(rewritten, history.totals[kind].bytesWritten - lastHistory.totals[kind].bytesWritten, { ...tags, kind });
    addDelta(sealed, history.sealedBytes - lastHistory.sealedBytes, tags);
    const wa = writeAmplification(history);
    if (wa !== null) amplification.set(wa, tags);
    lastHistory = history;
  };
}

function addDelta(counter: { add(n: number, tags: Record<string, string>): void }, n: number, tags: Record<string, string>): void {
  if (n > 0) counter.add(n, tags);
}
