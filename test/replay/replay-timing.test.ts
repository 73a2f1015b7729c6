import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflows } from '../../src/worker/create-worker';
import { RECORD_DIR } from '../support/record-history';

// Two workers can run the same history with an activation's jobs in another order, or
// with results taking more promise steps on their way in (another SDK path, a worker
// catching up on a run from its cache). A 2-node cluster test failed with nondeterminism
// that way. The histories recorded by the current code must replay under each such
// difference (workflows/activation.ts: decisions once per whole activation).

const PERTURBATIONS = ['signals-last', 'results-reversed', 'late-snapshots', 'late-merges'];

const bundleWith = (perturbation: string) => bundleWorkflows([path.join(__dirname, 'perturb', `${perturbation}.ts`)]);
/** The SDK's error names the nondeterminism after a long generic preamble: keep from the code on. */
const gist = (message: string) => message.slice(Math.max(0, message.indexOf('[TMPRL')), message.indexOf('[TMPRL') + 300);

async function replayFailures(perturbation: string, dir: string): Promise<{ failures: string[]; replayed: number }> {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  const histories = files.map((f) => ({ workflowId: f, history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))) }));
  const failures: string[] = [];
  let replayed = 0;
  for await (const r of Worker.runReplayHistories({ workflowBundle: await bundleWith(perturbation), replayName: `timing-${perturbation}` }, histories)) {
    replayed++;
    if (r.error) failures.push(`${r.workflowId}: ${gist(r.error.message)}`);
  }
  return { failures, replayed };
}

test.each(PERTURBATIONS)('runs recorded by the current code replay with %s', async (perturbation) => {
  const { failures, replayed } = await replayFailures(perturbation, RECORD_DIR);
  expect(failures).toEqual([]);
  expect(replayed).toBeGreaterThanOrEqual(20);
}, 180_000);
