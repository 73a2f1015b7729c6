import { DefaultLogger, Runtime } from '@temporalio/worker';
import { METRICS, SECONDS_BUCKETS } from './metric-names';
import { freePort } from '../server/ports';

let installed = false;

export interface RuntimeOptions {
  level?: 'WARN' | 'INFO' | 'DEBUG';
  /** host:port of the Prometheus endpoint; port 0 picks a free one; null: no metrics. */
  metricsAddress?: string | null;
}

/**
 * The SDK's Runtime (logger and metrics exporter) can be installed once per process, so
 * this installs it once: the first caller's options win. The SDK logs every worker state
 * change at INFO; keep warnings and errors only. Returns the metrics endpoint's
 * host:port, or null when this call installed none (or the runtime was already there).
 */
export async function installRuntime(opts: RuntimeOptions = {}): Promise<string | null> {
  if (installed) return null;
  const bindAddress = opts.metricsAddress ? await resolvePort(opts.metricsAddress) : null;
  install(opts.level ?? 'WARN', bindAddress);
  return bindAddress;
}

/** Without metrics, for tests and clients (synchronous, as before metrics existed). */
export function installQuietRuntime(level: 'WARN' | 'INFO' | 'DEBUG' = 'WARN'): void {
  install(level, null);
}

function install(level: 'WARN' | 'INFO' | 'DEBUG', bindAddress: string | null): void {
  if (installed) return;
  installed = true;
  const buckets = { [METRICS.turnWaitSeconds]: SECONDS_BUCKETS, [METRICS.phaseSeconds]: SECONDS_BUCKETS };
  Runtime.install({
    logger: new DefaultLogger(level),
    ...(bindAddress ? { telemetryOptions: { metrics: { prometheus: { bindAddress, histogramBucketOverrides: buckets } } } } : {}),
  });
}

/** The exporter does not report the port it bound, so port 0 is resolved here first. */
async function resolvePort(address: string): Promise<string> {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i);
  return address.slice(i + 1) === '0' ? `${host}:${await freePort(host)}` : address;
}
