import { reorderedJobs } from './perturb';

/** Signals after the activity results and timers of their activation. */
export const interceptors = reorderedJobs((jobs) => [...jobs.filter((j) => j.signalWorkflow == null), ...jobs.filter((j) => j.signalWorkflow != null)]);
