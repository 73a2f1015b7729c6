/**
 * A request the client refuses before sending it: wrong shape, too large, or not
 * meaningful for the table as it is (unknown shard or unit, a kind already paused).
 * The CLI maps it to exit status 2, like any bad input.
 */
export class RequestRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RequestRefusedError';
  }
}
