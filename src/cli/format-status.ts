import type { StatusView } from '../../workflows/messages';

/** Human-readable `turnstile status NAME`. */
export function formatStatus(s: StatusView): string {
  const lines = [
    `table ${s.table}  version ${s.version}  backlog ${s.backlog}  writePressure ${s.writePressure.toFixed(2)}${s.paused ? '  PAUSED' : ''}${s.pausedKinds.length ? `  paused kinds: ${s.pausedKinds.join(',')}` : ''}`,
    `turn: ${s.turn ? `${s.turn.unitId} for ${s.turn.sinceSecs} s (${s.turn.why})` : 'free'}`,
    'shards:',
    ...s.shards.map((sh) => `  ${sh.shard}  sealed ${sh.sealedThroughSeq}  merged ${sh.mergedThroughSeq}${sh.heldReason ? `  HELD: ${sh.heldReason}` : ''}`),
  ];
  if (s.preparing.length) lines.push('preparing:', ...s.preparing.map((u) => `  ${u.unitId} (${u.phase ?? 'starting'})`));
  if (s.queue.length) lines.push('queue:', ...s.queue.map((q) => `  ${q.unitId}  class ${q.class}  waited ${q.waitedSecs} s  ${q.reason}`));
  const c = s.counters;
  lines.push(`turns: ${Object.entries(c.turns).map(([k, n]) => `${k} ${n}`).join(', ')}  stalls ${c.stalls}  retries ${c.retries}`);
  return lines.join('\n');
}
