import { z } from 'zod';

// The one way a zod error becomes text, for every schema (config, policy, signal and
// update payloads) on every side (CLI, client, workflow validators): one line, each
// problem as "path: message", an unknown key as "path.key: unknown key". Pure, so the
// workflow bundle can use it.

/** "maxTurnWaitSecs.optimize: must be an integer in [1, 86400]; bogus: unknown key" */
export function formatZodError(error: z.ZodError, prefix = ''): string {
  return error.issues
    .map((i) => {
      if (i.code === z.ZodIssueCode.unrecognized_keys) {
        const at = [...i.path].join('.');
        return i.keys.map((k) => `${prefix}${at ? `${at}.` : ''}${k}: unknown key`).join('; ');
      }
      const at = `${prefix}${i.path.join('.')}`;
      return `${at || '(root)'}: ${i.message}`;
    })
    .join('; ');
}
