import type { StatusView } from '../../workflows/messages';
import { formatDrain } from '../policy/drain-eta';
import { formatBytes } from '../config/bytes';

type Preparing = StatusView['preparing'][number];

/** "merge/s0 read: filesRead 12, rowsRead 120000 (attempt 2, heartbeat 1.2 s ago)" */
function preparingLine(u: Preparing): string {
  if (u.queued) {
    const need = u.waitingForBytes ? `${formatBytes(u.waitingForBytes)} of headroom` : 'a worker with headroom';
    return `${u.unitId} waiting for ${need} (in the task queue, no worker has taken it)`;
  }
  const held = u.worker ? `, reserved ${formatBytes(u.reservedBytes)} on ${u.worker}` : '';
  return `${progressLine(u)}${held}`;
}

function progressLine(u: Preparing): string {
  if (!u.phase) return `${u.unitId} (no progress reported yet)`;
  const counters = Object.entries(u.progress ?? {})
    .filter(([k, v]) => k !== 'phase' && typeof v === 'number')
    .map(([k, v]) => `${k} ${String(v)}`)
    .join(', ');
  const extra = [u.attempt && u.attempt > 1 ? `attempt ${u.attempt}` : '', u.heartbeatAgeSecs != null ? `heartbeat ${u.heartbeatAgeSecs.toFixed(1)} s ago` : ''].filter(Boolean).join(', ');
  return `${u.unitId} ${u.phase}${counters ? `: ${counters}` : ''}${extra ? ` (${extra})` : ''}`;
}

/** Human-readable `turnstile status NAME`. */
export function formatStatus(s: StatusView): string {
  const lines = [
    `table ${s.table}  version ${s.version}  backlog ${s.backlog}  writePressure ${s.writePressure.toFixed(2)}${s.paused ? '  PAUSED' : ''}${s.pausedKinds.length ? `  paused kinds: ${s.pausedKinds.join(',')}` : ''}`,
    `turn: ${s.turn ? `${s.turn.unitId} for ${s.turn.sinceSecs} s (${s.turn.why})` : 'free'}`,
    // Absent from the state of workflows running older code.
    ...(s.drain ? [`drain ETA: ${formatDrain(s.drain)}`] : []),
    'shards:',
    ...s.shards.map((sh) => `  ${sh.shard}  sealed ${sh.sealedThroughSeq}  merged ${sh.mergedThroughSeq}${sh.heldReason ? `  HELD: ${sh.heldReason}` : ''}`),
  ];
  if (s.adopted) {
    const o = s.adopted.observed;
    const seen = o ? `${o.fragments} fragments (${o.smallFragments} small), ${o.rows} rows, ${o.unindexedRows} unindexed` : 'not looked at yet';
    lines.push(`adopted ${s.adopted.uri}  mode ${s.adopted.mode}${s.adopted.mode === 'shadow' ? ' (decides, commits nothing)' : ''}  ${seen}  conflicts ${s.counters.commitConflicts ?? 0}`);
  }
  if (s.preparing.length) lines.push('preparing:', ...s.preparing.map((u) => `  ${preparingLine(u)}`));
  if (s.queue.length) lines.push('queue:', ...s.queue.map((q) => `  ${q.unitId}  class ${q.class}  waited ${q.waitedSecs} s  ${q.reason}`));
  const c = s.counters;
  // Rejected signals only when there were any (a buggy or hostile client is about).
  const rejected = c.rejectedSignals ? `  rejected signals ${c.rejectedSignals}` : '';
  lines.push(`turns: ${Object.entries(c.turns).map(([k, n]) => `${k} ${n}`).join(', ')}  stalls ${c.stalls}  retries ${c.retries}${rejected}`);
  // Absent from the state of workflows running older code.
  if (s.cost) {
    const written = Object.entries(s.cost.bytesWritten).map(([k, n]) => `${k} ${formatBytes(n ?? 0)}`).join(', ');
    const wa = s.cost.writeAmplification === null ? '-' : s.cost.writeAmplification.toFixed(2);
    lines.push(`write amplification: ${wa} (written by units ${written}; sealed ${formatBytes(s.cost.sealedBytes)}); \`turnstile history ${s.table}\` lists units`);
  }
  if (s.grants?.length) lines.push(`last turn: ${s.grants[s.grants.length - 1]!.unitId} (${s.grants[s.grants.length - 1]!.why}); \`turnstile why ${s.table}\` lists more`);
  if (s.snapshot) lines.push(`snapshot: every ${s.snapshot.everySecs} s, ${s.snapshot.running ? 'running' : `next in ${Math.round(s.snapshot.nextInSecs ?? 0)} s`}`);
  return lines.join('\n');
}
