// Everything the worker's workflow bundle exports.
export { tableWorkflow } from './table';
export type { TableWorkflowArgs } from './table';
