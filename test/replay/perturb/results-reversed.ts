import { reorderedJobs } from './perturb';

/** The activity results of an activation in reverse order, in the places results had; every other job stays where it was. */
export const interceptors = reorderedJobs((jobs) => {
  const results = jobs.filter((j) => j.resolveActivity != null).reverse();
  return jobs.map((j) => (j.resolveActivity != null ? results.shift()! : j));
});
