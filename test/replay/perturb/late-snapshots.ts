import { lateResults } from './perturb';

/** Snapshots' results come back late. */
export const interceptors = lateResults({ snapshot: 8 });
