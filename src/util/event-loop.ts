// Work that runs on a worker's main thread shares it with the Temporal bridge: every
// workflow task passes through it twice. Long loops yield here between slices of about
// a millisecond or two, so that a workflow task waits for one slice, not for the loop.

/** Lets timers and I/O callbacks (the Temporal bridge's among them) run before going on. */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Bytes copied or hashed between two yields: about a millisecond of work. */
export const YIELD_EVERY_BYTES = 2 * 2 ** 20;
