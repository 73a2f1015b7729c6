import { ApplicationFailure } from '@temporalio/activity';
import { CorruptArrowFileError } from '../src/storage/arrow';
import { TableNotFoundError } from '../src/storage/table-meta';

// Failure types the workflow can act on. Non-retryable means "retrying the same input
// cannot help": the unit is held or re-planned instead of burning attempts.

export type FailureType =
  | 'CorruptGeneration'
  | 'MissingGeneration'
  | 'InvalidGeneration'
  | 'NotSealed'
  | 'PreparedMissing'
  | 'CorruptPrepared'
  | 'TableNotFound'
  | 'InvalidInput'
  | 'GcRefused'
  /** A single generation whose merge needs more memory than any worker's budget. */
  | 'TooBig';

/** `details` carries the fields a caller may branch on (the failure's type says which). */
export const fail = (type: FailureType, message: string, ...details: unknown[]): ApplicationFailure => ApplicationFailure.nonRetryable(message, type, ...details);

export const isNotFound = (err: unknown): boolean => (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';

/** Errors every activity maps the same way; anything else stays retryable. */
export function mapCommonError(err: unknown): unknown {
  if (err instanceof TableNotFoundError) return fail('TableNotFound', err.message, { table: err.table });
  return err;
}

export { CorruptArrowFileError };
