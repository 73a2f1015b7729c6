import type { ShardState, TableState } from './types';

/**
 * Writer backpressure (docs/design.md invariant 8): 0 at or below soft, linear up to 1 at hard, so a
 * one-generation change of backlog moves it by at most 1 / (hard - soft). The config
 * schema rejects hard <= soft; if such a policy reaches us anyway the pressure steps
 * from 0 to 1 just above soft rather than dividing by zero.
 */
export function writePressure(backlog: number, soft: number, hard: number): number {
  if (backlog <= soft) return 0;
  if (hard <= soft || backlog >= hard) return 1;
  return (backlog - soft) / (hard - soft);
}

export const shardBacklog = (s: ShardState): number => Math.max(0, s.sealedThroughSeq - s.mergedThroughSeq);

export function backlogOf(state: Pick<TableState, 'shards'>): number {
  let sum = 0;
  for (const s of state.shards) sum += shardBacklog(s);
  return sum;
}
