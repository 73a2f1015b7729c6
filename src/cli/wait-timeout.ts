// The line `wait-merged` ends with when its --timeout passes: how far the shard got and,
// when the table says so, why it went no further, so the reader knows whether to wait
// longer, resume the table, or look at a held shard.

export interface WaitTarget {
  table: string;
  shard: string;
  seq: number;
  timeoutSecs: number;
}

/** The shard as the table's state query showed it at the timeout (a slice of StatusView). */
export interface ShardStanding {
  paused: boolean;
  pausedKinds: readonly string[];
  shards: readonly { shard: string; sealedThroughSeq: number; mergedThroughSeq: number; heldReason: string | null }[];
}

/**
 * "wait-merged: timed out after 600 s: orders/s0 merged through seq 5, waiting for 9
 * (table paused)". `standing` null: the table did not answer (`unanswered` says how).
 */
export function timedOutLine(t: WaitTarget, standing: ShardStanding | null, unanswered = 'the table did not answer its query'): string {
  const head = `wait-merged: timed out after ${t.timeoutSecs} s: ${t.table}/${t.shard}`;
  const sh = standing?.shards.find((s) => s.shard === t.shard);
  if (!standing || !sh) return `${head} merged through seq unknown (${unanswered}), waiting for ${t.seq}`;
  const why: string[] = [];
  if (standing.paused) why.push('table paused');
  else if (standing.pausedKinds.includes('merge')) why.push('merge paused');
  if (sh.heldReason !== null) why.push(`merge of ${t.shard} held: ${sh.heldReason}`);
  if (sh.sealedThroughSeq < t.seq) why.push(`sealed only through seq ${sh.sealedThroughSeq}`);
  return `${head} merged through seq ${sh.mergedThroughSeq}, waiting for ${t.seq}${why.length > 0 ? ` (${why.join('; ')})` : ''}`;
}
