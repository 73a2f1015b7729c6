import { isS3, resolveLoc } from './location';

// Which storage a process actually reaches: the location of TURNSTILE_DATA and, on S3,
// the endpoint the AWS environment points at (the same s3://BUCKET/PREFIX on two
// endpoints is two different roots). Credentials and region are not part of it: they
// decide whether a process may reach a root, not which root it is. Written so that two
// processes describing the same root produce the same key, whatever spelling of it
// each was given (relative paths, `..`, trailing slashes, upper-case hosts).

export interface StorageRoot {
  /** An absolute local path, or s3://BUCKET/PREFIX without a trailing slash. */
  location: string;
  /** The S3 endpoint as a normalised URL; null on a local root or on AWS's own endpoints. */
  endpoint: string | null;
}

const ENDPOINT_PARAM = '?endpoint=';

/** The endpoint the S3 client uses (s3-env.ts reads the same two variables). */
const endpointIn = (env: NodeJS.ProcessEnv): string | undefined => env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;

/** `HTTP://Host:80/` and `http://host` are one endpoint: lower-case scheme and host, no default port, no trailing slash. */
export function normaliseEndpoint(url: string): string {
  const trimmed = url.trim();
  try {
    const u = new URL(trimmed);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return trimmed.replace(/\/+$/, '');
  }
}

/**
 * The root of `dataRoot` as seen with `env`. `realLocal` canonicalises a local path
 * (symbolic links; canonical-local-path.ts); pure callers leave it out.
 */
export function storageRootOf(dataRoot: string, env: NodeJS.ProcessEnv, realLocal: (p: string) => string = (p) => p): StorageRoot {
  const location = resolveLoc(dataRoot);
  if (!isS3(location)) return { location: realLocal(location), endpoint: null };
  const endpoint = endpointIn(env);
  return { location, endpoint: endpoint ? normaliseEndpoint(endpoint) : null };
}

/** One string per root: equal roots, equal keys. What a worker advertises (worker-identity.ts). */
export const rootKey = (r: StorageRoot): string => (r.endpoint === null ? r.location : `${r.location}${ENDPOINT_PARAM}${r.endpoint}`);

/** The root a key names, or null when it is not one. */
export function parseRootKey(key: string): StorageRoot | null {
  if (isS3(key)) {
    const at = key.indexOf(ENDPOINT_PARAM);
    return at < 0 ? { location: key, endpoint: null } : { location: key.slice(0, at), endpoint: key.slice(at + ENDPOINT_PARAM.length) };
  }
  return key.startsWith('/') ? { location: key, endpoint: null } : null;
}

export const sameRoot = (a: StorageRoot, b: StorageRoot): boolean => rootKey(a) === rootKey(b);

/** For messages: the root as the environment variables that select it. */
export function describeRoot(r: StorageRoot): string {
  if (!isS3(r.location)) return r.location;
  return `${r.location} (${r.endpoint === null ? 'AWS S3, no AWS_ENDPOINT_URL' : `AWS_ENDPOINT_URL=${r.endpoint}`})`;
}
