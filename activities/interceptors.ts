import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import { Context } from '@temporalio/activity';
import { mapCommonError } from './failures';
import { activityEnded } from './metrics';
import { progressEnded } from './progress';

// The one wrapper of every activity: it also closes the activity's last progress phase
// for the phase-duration metric (metrics.ts) and drops a first heartbeat still held
// back (progress.ts). The one error wrapper: errors every activity maps the same way
// (see failures.ts) are mapped here, once, instead of a try/catch in each. Workers
// register it (src/worker/create-worker.ts); activity tests run under it too.

class CommonErrors implements ActivityInboundCallsInterceptor {
  async execute(...[input, next]: Parameters<NonNullable<ActivityInboundCallsInterceptor['execute']>>): Promise<unknown> {
    try {
      return await next(input);
    } catch (err) {
      throw mapCommonError(err);
    } finally {
      activityEnded(Context.current());
      progressEnded(Context.current());
    }
  }
}

export const activityInterceptors: ActivityInterceptorsFactory[] = [() => ({ inbound: new CommonErrors() })];
