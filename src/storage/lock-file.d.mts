export declare class LockTimeoutError extends Error {
  constructor(lockPath: string, waitedMs: number, holder: string);
}

export interface LockOptions {
  /** Give up after this long (default 60 s); Infinity waits for as long as the holder lives. */
  timeoutMs?: number;
  /** Longest wait between two tries (default 50 ms); waits double from 2 ms up to it. */
  maxWaitMs?: number;
  /** What the lock file holds (default holderText()); the same text must not be held twice at once. */
  text?: string;
  /** Called before each wait with the holder's text and the time waited so far. */
  onWait?(holder: string, waitedMs: number): void;
}

export declare function holderText(): string;
export declare function isStale(text: string, ageMs: number): boolean;
export declare function withFileLock<T>(lockPath: string, fn: () => Promise<T>, opts?: LockOptions): Promise<T>;
export declare function withFileLockSync<T>(lockPath: string, fn: () => T, opts?: LockOptions): T;
