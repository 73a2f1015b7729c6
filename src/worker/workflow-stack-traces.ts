import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';

// The SDK records, for the `__stack_trace` query (the Temporal UI's "Stack Trace" tab),
// where every promise of a workflow was created: a V8 promise hook takes `new
// Error().stack` inside the workflow's context at each promise and maps every frame
// through the bundle's source map. That was 35-40% of the worker's CPU per workflow
// activation here (a trivial workflow: 4.2 -> 2.7 ms p50; bench/README.md "Workflow
// stack traces"), and a table runs an activation per seal, per preparation and per commit.
//
// Off (the default), the bundle sets the workflow context's `Error.stackTraceLimit` to
// 0 before the SDK freezes that context's globals: the hook's stack capture then walks
// no frames and keeps nothing. The price: the UI's stack trace is empty and errors
// raised inside workflow code carry their message but no stack (activities keep
// theirs). `worker.workflowStackTraces: true` (TURNSTILE_WORKFLOW_STACK_TRACES=1) brings
// both back.

/** Runs before the bundle's own code, on its first line, so the source map's line numbers stay right. */
const NO_STACKS_PREFIX = 'Error.stackTraceLimit = 0;';

export function withWorkflowStackTraces(bundle: WorkflowBundleWithSourceMap, stackTraces: boolean): WorkflowBundleWithSourceMap {
  return stackTraces ? bundle : { code: NO_STACKS_PREFIX + bundle.code, sourceMap: bundle.sourceMap };
}
