import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

// Test only (replay-timing.test.ts): what may differ between two workers that run the same
// history, without the history differing: the order of an activation's jobs, and how many
// promise steps an activity's result takes on its way back into the workflow. The table
// workflow's commands must depend on neither (workflows/activation.ts).

const steps = async (n: number) => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

/** Results of the named activity types take `n` extra promise steps. */
export function lateResults(late: Record<string, number>): WorkflowInterceptorsFactory {
  return () => ({
    outbound: [
      {
        async scheduleActivity(input, next) {
          const n = late[input.activityType] ?? 0;
          try {
            const r = await next(input);
            await steps(n);
            return r;
          } catch (err) {
            await steps(n);
            throw err;
          }
        },
      },
    ],
  });
}

type Job = { signalWorkflow?: unknown; initializeWorkflow?: unknown; resolveActivity?: unknown };

/** Each activation's jobs (after the start of the run, which stays first) reordered by `order`. */
export function reorderedJobs(order: (jobs: Job[]) => Job[]): WorkflowInterceptorsFactory {
  return () => ({
    internals: [
      {
        activate(input, next) {
          const jobs = [...((input.activation.jobs ?? []) as Job[])];
          const start = jobs[0]?.initializeWorkflow != null ? jobs.splice(0, 1) : [];
          return next({ ...input, activation: { ...input.activation, jobs: [...start, ...order(jobs)] } as typeof input.activation });
        },
      },
    ],
  });
}
