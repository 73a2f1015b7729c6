import type { S3ClientConfig } from '@aws-sdk/client-s3';

// Endpoint and credentials come from the standard AWS environment, read in one place so
// Turnstile's own S3 client and Lance's (which takes them as storageOptions) agree:
// AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3) for a local or non-AWS server, with
// path-style addressing and plain http allowed; AWS_REGION (default us-east-1);
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN).

const endpointOf = (env: NodeJS.ProcessEnv): string | undefined => env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
const regionOf = (env: NodeJS.ProcessEnv): string => env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1';

/**
 * How long a request to S3 may wait: for its connection, and for the next byte once
 * connected. The SDK has no limit of its own, so a server that took a connection and
 * never answered held a seal or a preparation until the activity's own timeout, or a
 * CLI command for ever. Idle time, not a request's length: a large upload that moves
 * is never cut. Lance's own client gives up after 30 s per request.
 */
export const S3_TIMEOUTS = { connectMs: 5_000, idleMs: 10_000 };

export function s3ClientConfig(env: NodeJS.ProcessEnv = process.env, timeouts = S3_TIMEOUTS): S3ClientConfig & { endpoint?: string } {
  const endpoint = endpointOf(env);
  return {
    requestHandler: { connectionTimeout: timeouts.connectMs, socketTimeout: timeouts.idleMs },
    region: regionOf(env),
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    // Explicit when given, so Turnstile's client and Lance's use the same keys; without
    // them the SDK's default chain (profiles, instance roles) applies.
    ...(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) } }
      : {}),
    // Unreachable endpoints fail in seconds, not after the SDK's long default backoff.
    maxAttempts: 3,
    // The SDK's default CRC32 on every request is not implemented by every
    // S3-compatible server; the body's integrity is the Arrow file's own sha256.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
}

/** LanceDB's storageOptions for the same endpoint and credentials. */
export function lanceStorageOptions(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const endpoint = endpointOf(env);
  const o: Record<string, string> = { awsRegion: regionOf(env) };
  if (endpoint) {
    o.awsEndpoint = endpoint;
    if (endpoint.startsWith('http://')) o.allowHttp = 'true';
  }
  if (env.AWS_ACCESS_KEY_ID) o.awsAccessKeyId = env.AWS_ACCESS_KEY_ID;
  if (env.AWS_SECRET_ACCESS_KEY) o.awsSecretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (env.AWS_SESSION_TOKEN) o.awsSessionToken = env.AWS_SESSION_TOKEN;
  return o;
}

/**
 * The SDK, loaded on first use (CLI commands on local storage never pay for it). The
 * pinned SDK supports this Node; its notice that future releases need Node 22 would be
 * a second line on stderr of every command.
 */
export function importS3Sdk(): Promise<typeof import('@aws-sdk/client-s3')> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  return import('@aws-sdk/client-s3');
}
