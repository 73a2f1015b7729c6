import fs from 'node:fs';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { inject } from 'vitest';
import { workflowBundle } from '../../src/worker/create-worker';
import { withWorkflowStackTraces } from '../../src/worker/workflow-stack-traces';

// The table workflow's bundle, made once per test run by global-setup.ts: webpack took
// ~3 s of CPU in every test file that made its own. Bundled here only when the run has
// none (a file run outside the suite's global setup).

const cached: Partial<Record<'stacks' | 'noStacks', Promise<WorkflowBundleWithSourceMap>>> = {};

export function testWorkflowBundle(opts: { stackTraces?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  const file = inject('workflowBundleFile');
  if (!file) return workflowBundle(opts);
  const which = opts.stackTraces ? 'stacks' : 'noStacks';
  cached[which] ??= fs.promises.readFile(file, 'utf8').then((json) => withWorkflowStackTraces(JSON.parse(json) as WorkflowBundleWithSourceMap, opts.stackTraces ?? false));
  return cached[which];
}
