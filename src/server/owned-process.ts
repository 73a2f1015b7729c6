import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

// The server processes Turnstile starts for itself (the Temporal dev server, its UI
// server, SeaweedFS): each in its own process group, watched so it dies with us, started
// again when it exits before serving, and stopped in order.

/** A server process ended before it answered: worth starting again (startAgainIfExited). */
export class ExitedBeforeServingError extends Error {}

/** Rejects once `child` has exited (`what` names it); for racing against a wait (a later exit is nobody's error). */
export function exitOf(child: ChildProcess, what: string): Promise<never> {
  const p = new Promise<never>((_, reject) => {
    const fail = () => reject(new ExitedBeforeServingError(`${what} exited with code ${child.exitCode ?? child.signalCode} before serving`));
    if (child.exitCode !== null || child.signalCode !== null) fail();
    else child.once('exit', fail);
  });
  p.catch(() => undefined);
  return p;
}

/**
 * A process killed outright (SIGKILL, a closed pipe) runs no exit handler, so a small
 * detached shell watches us and stops the server once we are gone: no orphan server
 * keeps the port or the database.
 */
export function watchParent(serverPid: number): ChildProcess {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -TERM ${serverPid} 2>/dev/null; sleep 10; kill -0 ${serverPid} 2>/dev/null && kill -KILL ${serverPid}`;
  const w = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' });
  w.unref();
  return w;
}

/**
 * Ports are found free a moment before a server binds them (the dev server binds ten:
 * each service's gRPC and membership ports, HTTP, metrics, and the UI's); with several
 * servers starting at once one can be taken
 * meanwhile and the server exits ("bind: address already in use"). It is started again
 * then, with fresh ports. A fresh-clone CI run failed once this way.
 */
const START_ATTEMPTS = 3;

export async function startAgainIfExited<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      if (attempt >= START_ATTEMPTS || !(e instanceof ExitedBeforeServingError)) throw e;
    }
  }
}

/** A process spawnOwned started: `killNow` kills it and its watchdog at once. */
export interface OwnedProcess {
  child: ChildProcess;
  watchdog: ChildProcess;
  killNow: () => void;
}

/** A server process in its own process group, killed when we exit or die (watchParent). */
export function spawnOwned(binary: string, args: string[], logFile: string | undefined, cwd?: string): OwnedProcess {
  const out = logFile ? fs.openSync(logFile, 'a') : 'ignore';
  // Its own process group: a terminal's Ctrl-C reaches us, and we stop the server only
  // after the workers have drained (they still talk to it while shutting down).
  const child = spawn(binary, args, { stdio: ['ignore', out, out], detached: true, ...(cwd ? { cwd } : {}) });
  if (typeof out === 'number') fs.closeSync(out); // the child has its own copy
  const watchdog = watchParent(child.pid!);
  const killNow = () => {
    child.kill('SIGKILL');
    watchdog.kill('SIGKILL');
  };
  process.on('exit', killNow);
  return { child, watchdog, killNow };
}

/** Stops an owned process: SIGTERM, then SIGKILL after 10 s; its watchdog goes at once. */
export async function stopOwned(p: OwnedProcess): Promise<void> {
  process.off('exit', p.killNow);
  p.watchdog.kill('SIGKILL');
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.child.once('exit', () => r()));
  p.child.kill('SIGTERM');
  const timer = setTimeout(p.killNow, 10_000);
  await exited;
  clearTimeout(timer);
}
