// Scenario: a hot merger (generations keep arriving on 2 shards, so a merge is always
// commit-ready) plus an optimize that becomes ready every minute, for one simulated
// hour. Shows that optimize still gets turns (maxConsecutiveTurns, promotion after
// maxTurnWaitSecs) while the backlog stays bounded.
//
//   npx tsx bench/simulate-hot-merger.ts

import { formatSummary, runSimulation, simPolicy, summarize } from '../src/sim';

const HOUR = 3_600_000;

const policy = simPolicy({
  // Only merge and optimize take part; optimize is requested every minute below.
  periodSecs: { optimize: 0, index: 0, gc: 0 },
  softBacklog: 50,
  hardBacklog: 500,
});

const scenario = (policy: ReturnType<typeof simPolicy>) => runSimulation({
  shards: ['s0', 's1'],
  policy,
  seed: 42,
  endMs: HOUR,
  prepareMs: { merge: [1_000, 3_000], optimize: [3_000, 6_000], index: 1_000, gc: 1_000 },
  commitMs: { merge: [1_500, 3_500], optimize: [10_000, 20_000], index: 5_000, gc: 5_000 },
  snapshotMs: [200, 800],
  arrivals: [{ everyMs: [500, 1_500], deliveryDelayMs: [0, 200], duplicateProb: 0.05, rowsPerGeneration: 1_000 }],
  optimizeEverySecs: 60,
  sampleEveryMs: 5 * 60_000,
});
const result = scenario(policy);

const p = policy;
console.log('hot merger: 2 shards sealing ~1 generation/s each; merge prepare 1-3 s, commit 1.5-3.5 s;');
console.log('optimize requested every 60 s; prepare 3-6 s, commit 10-20 s; one simulated hour');
console.log(
  `policy: classes merge ${p.classes.merge} / optimize ${p.classes.optimize}, maxConsecutiveTurns merge ${p.maxConsecutiveTurns.merge}, ` +
    `maxTurnWaitSecs merge ${p.maxTurnWaitSecs.merge} / optimize ${p.maxTurnWaitSecs.optimize}, softBacklog ${p.softBacklog}, hardBacklog ${p.hardBacklog}`,
);
console.log('');
console.log(formatSummary(summarize(result)));

// The same load with the streak rule out of the way (merges may take 1000 turns in a
// row): optimize gets the turn only in gaps between commit-ready merges or by promotion
// after maxTurnWaitSecs; its worst wait must stay within 120 s + the longest turn.
const promotionOnly = simPolicy({ ...policy, maxConsecutiveTurns: { ...policy.maxConsecutiveTurns, merge: 1000 } });
console.log('');
console.log('same load, maxConsecutiveTurns merge 1000 (no streak limit; bound: 120 s + longest turn 20 s):');
console.log('');
console.log(formatSummary(summarize(scenario(promotionOnly))));
