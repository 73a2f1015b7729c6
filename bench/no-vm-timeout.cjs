// Bench only (`bench/workflow-task-cost.ts --compare watchdog`), preloaded with
// NODE_OPTIONS=--require into a worker process and, through it, its threads: drops the
// timeout of every vm runInContext call, so Node starts no watchdog thread for each call
// into the workflow sandbox. Never for a real worker: workflow code that never yields
// would then hold the workflow thread, and every table on that worker, forever.
const vm = process.getBuiltinModule('node:vm');
const runInContext = vm.Script.prototype.runInContext;
vm.Script.prototype.runInContext = function (context, options) {
  return runInContext.call(this, context, options && options.timeout !== undefined ? { ...options, timeout: undefined } : options);
};
