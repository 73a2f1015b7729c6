import { lateResults } from './perturb';

/** Merge preparations' and commits' results come back late. */
export const interceptors = lateResults({ prepareMerge: 8, commitMerge: 4 });
