import { z } from 'zod';
import { KINDS } from '../policy/types';

// Payload schemas of the workflow's signals and updates. Pure: the CLI validates with
// them before sending (one-line errors), the workflow validates again because a signal
// cannot be refused and an invalid one must not wedge the workflow task.

const kind = z.enum(KINDS, { errorMap: () => ({ message: `must be one of ${KINDS.join(', ')}` }) });
const seq = (what: string) =>
  z.number({ invalid_type_error: `${what} must be an integer >= 0` }).int({ message: `${what} must be an integer >= 0` }).min(0, { message: `must be an integer >= 0` });
const shard = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, { message: 'must be 1-32 of a-z, 0-9, "_" or "-"' });

// bytes: the size of generation sealedThroughSeq (lets a small one merge without a
// preparation activity; policy directMergeMaxBytes). Optional: older writers omit it.
export const demandSchema = z
  .object({ shard, sealedThroughSeq: seq('sealedThroughSeq'), revision: seq('revision'), bytes: seq('bytes').max(Number.MAX_SAFE_INTEGER, { message: 'must be an integer >= 0' }).optional() })
  .strict();
export type Demand = z.infer<typeof demandSchema>;
/** Several shards' demand in one signal: what a writer's DemandSender sends. */
export const demandsSchema = z.array(demandSchema).min(1).max(1000);

export const bumpSchema = z
  .object({
    kind: kind.optional(),
    unitId: z.string().min(1).max(100).optional(),
    class: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)], { errorMap: () => ({ message: 'must be 1, 2, 3 or 4' }) }).default(1),
    reason: z.string().min(1, { message: 'must not be empty' }).max(200, { message: 'must be at most 200 characters' }),
    forSecs: z.number().int().min(1, { message: 'must be an integer in [1, 604800]' }).max(604800, { message: 'must be an integer in [1, 604800]' }).default(600),
  })
  .strict()
  .refine((b) => (b.kind === undefined) !== (b.unitId === undefined), { message: 'give exactly one of --kind or --unit', path: ['kind'] });
export type BumpRequest = z.input<typeof bumpSchema>;

export const pauseSchema = z.object({ kind: kind.nullable().default(null) }).strict();
export type PauseRequest = z.input<typeof pauseSchema>;

export const awaitMergedSchema = z.object({ shard, seq: seq('seq') }).strict();
export type AwaitMergedRequest = z.infer<typeof awaitMergedSchema>;
export interface AwaitMergedResult {
  shard: string;
  seq: number;
  mergedThroughSeq: number;
  /** Table version at the time; it contains the generation when `merged`. */
  version: number;
  /** False only when the run is about to continue as new: ask again. */
  merged: boolean;
}
