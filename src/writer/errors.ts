// Refusals a writer can retry later. Backpressure is smooth up to hardBacklog; at it,
// a seal is refused loudly rather than dropped or queued without bound.

export class OverBacklogError extends Error {
  /** Retrying after the backlog drains succeeds; callers (and the CLI) can rely on this. */
  readonly retryable = true;

  constructor(
    readonly table: string,
    readonly backlog: number,
    readonly hardBacklog: number,
  ) {
    const over = backlog - hardBacklog;
    super(
      over > 0
        ? `table ${table}: backlog ${backlog} is ${over} over hardBacklog ${hardBacklog}; retry later`
        : `table ${table}: backlog ${backlog} has reached hardBacklog ${hardBacklog}; retry later`,
    );
    this.name = 'OverBacklogError';
  }
}

/**
 * Rows a writer can never seal as given (a column of the wrong type, a null or missing
 * key, a key of another shard): retrying does not help, the input must change.
 */
export class RowsRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RowsRejectedError';
  }
}
