import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import { mapCommonError } from './failures';

// The one error wrapper of every activity: errors every activity maps the same way
// (see failures.ts) are mapped here, once, instead of a try/catch in each. Workers
// register it (src/worker/create-worker.ts); activity tests run under it too.

class CommonErrors implements ActivityInboundCallsInterceptor {
  async execute(...[input, next]: Parameters<NonNullable<ActivityInboundCallsInterceptor['execute']>>): Promise<unknown> {
    try {
      return await next(input);
    } catch (err) {
      throw mapCommonError(err);
    }
  }
}

export const activityInterceptors: ActivityInterceptorsFactory[] = [() => ({ inbound: new CommonErrors() })];
