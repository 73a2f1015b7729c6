import type { TimerOptions } from '@temporalio/workflow';

// Summaries of the table workflow's timers: the Temporal UI shows a timer by its
// sequence number and duration ("10 (1m)") unless it has a summary, so each says what
// it waits for.

/** Summary of the table's one alarm when the shell did not say what it is for. */
export const ALARM_FALLBACK = "the next deadline of the table's scheduler";

/** The alarm's timer, armed for the core's earliest deadline; `reason` from src/policy/wake.ts. */
export const alarmTimer = (reason: string | null | undefined): TimerOptions => ({ summary: reason ?? ALARM_FALLBACK });

/** The bound of one awaitMerged update: at its end the update answers "not yet" and the client asks again. */
export const awaitMergedTimer = (req: { shard: string; seq: number }): TimerOptions => ({ summary: `awaitMerged ${req.shard} seq ${req.seq}: answer "not yet" if still unmerged` });
