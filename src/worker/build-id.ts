import { createHash } from 'node:crypto';
import { version } from '../../package.json';

/** The Worker Deployment every Turnstile worker polls as a version of (config `worker.deploymentName`). */
export const DEFAULT_DEPLOYMENT_NAME = 'turnstile';

/**
 * The build id of a workflow bundle: the release and a digest of the workflow code the
 * worker runs. Table runs are pinned to it, so two workers share a build id exactly when
 * they would replay each other's runs. The stack-trace switch's one-line prefix and the
 * inline source map (absolute paths of the machine that built it) are left out: they do
 * not change what a run decides.
 */
export function buildIdOf(bundleCode: string): string {
  const code = bundleCode
    .replace(/^Error\.stackTraceLimit = 0;/, '')
    .replace(/\n\/\/# sourceMappingURL=[^\n]*\s*$/, '');
  return `${version}-${createHash('sha256').update(code).digest('hex').slice(0, 12)}`;
}

/** A version as the TemporalWorkerDeploymentVersion search attribute holds it. */
export const visibleVersion = (deploymentName: string, buildId: string): string => `${deploymentName}:${buildId}`;
