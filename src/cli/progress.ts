// Progress of long commands (write --rows N, wait-merged) on one self-overwriting
// stderr line, only when stderr is a terminal: piped or captured output (scripts, CI,
// tests) stays exactly the command's result lines.

export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

export interface Progress {
  /** False when nothing is shown (not a terminal): skip the work of finding out progress. */
  readonly active: boolean;
  /** Shows `text` (with the seconds since start) in place of the previous line. */
  show(text: string): void;
  /** Clears the line for good; the command's own output follows on a clean line. */
  done(): void;
}

const CLEAR = '\r\x1b[2K';

export function progress(stream: ProgressStream = process.stderr, now: () => number = Date.now): Progress {
  if (!stream.isTTY) return { active: false, show() {}, done() {} };
  const start = now();
  let shown = false;
  let finished = false;
  return {
    active: true,
    show(text) {
      if (finished) return; // a late tick after done()
      stream.write(`${CLEAR}${text} (${((now() - start) / 1000).toFixed(0)} s)`);
      shown = true;
    },
    done() {
      if (shown) stream.write(CLEAR);
      finished = true;
    },
  };
}

/** Calls `tick` now and every `everyMs` until the returned stop function is called. */
export function every(everyMs: number, tick: () => void | Promise<void>): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const run = async (): Promise<void> => {
    await Promise.resolve(tick()).catch(() => {}); // progress is best effort
    if (!stopped) timer = setTimeout(() => void run(), everyMs).unref();
  };
  void run();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
