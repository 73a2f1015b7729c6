import type { Context } from '@temporalio/activity';
import type { MetricHistogram, MetricMeter } from '@temporalio/common';
import { METRICS } from '../src/worker/metric-names';

// Preparation and commit phase durations (turnstile_phase_seconds{phase}): the progress
// reporter marks each phase change (activities/progress.ts) and the activity interceptor
// closes the last phase when the activity returns or fails. The activity context's meter
// tags them with the activity type, namespace and task queue.

const clocks = new WeakMap<Context, { phase: string; sinceMs: number }>();
const histograms = new WeakMap<MetricMeter, MetricHistogram>();

function histogram(ctx: Context): MetricHistogram {
  let h = histograms.get(ctx.metricMeter);
  if (!h) {
    h = ctx.metricMeter.createHistogram(METRICS.phaseSeconds, 'float', 's', 'seconds an activity spent in each progress phase');
    histograms.set(ctx.metricMeter, h);
  }
  return h;
}

function close(ctx: Context, nowMs: number): void {
  const c = clocks.get(ctx);
  if (c) histogram(ctx).record(Math.max(0, nowMs - c.sinceMs) / 1000, { phase: c.phase });
}

/** The activity reported `phase`: if that is a new phase, the previous one ended now. */
export function phaseReached(ctx: Context, phase: string): void {
  const c = clocks.get(ctx);
  if (c?.phase === phase) return;
  const nowMs = Date.now();
  close(ctx, nowMs);
  clocks.set(ctx, { phase, sinceMs: nowMs });
}

/** The activity finished (either way): its last phase ends now. */
export function activityEnded(ctx: Context): void {
  close(ctx, Date.now());
  clocks.delete(ctx);
}
