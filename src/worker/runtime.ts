import { DefaultLogger, Runtime } from '@temporalio/worker';

let installed = false;

/** The SDK logs every worker state change at INFO; keep warnings and errors only. Once per process. */
export function installQuietRuntime(level: 'WARN' | 'INFO' | 'DEBUG' = 'WARN'): void {
  if (installed) return;
  installed = true;
  Runtime.install({ logger: new DefaultLogger(level) });
}
