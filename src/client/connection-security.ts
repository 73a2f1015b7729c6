import fs from 'node:fs';
import { UsageError } from '../messages/errors';

// TLS / mTLS and an API key for the Temporal connection of every Turnstile process
// (CLI, writers, workers, the read-only client), from the Temporal CLI's variables:
//   TEMPORAL_TLS_SERVER_CA_CERT_PATH  CA of the server certificate (default: system CAs)
//   TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH  client certificate (mTLS)
//   TEMPORAL_TLS_SERVER_NAME  name to check in the server certificate (default: the host)
//   TEMPORAL_TLS=true  TLS with none of the above (e.g. Temporal Cloud with an API key)
//   TEMPORAL_API_KEY  sent as "authorization: Bearer KEY"; implies TLS, as in the CLI
// Nothing set: plaintext, as against the dev server.

export interface TlsFiles {
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
  serverNameOverride?: string;
}

export interface ConnectionSecurity {
  tls?: TlsFiles;
  apiKey?: string;
}

function readPem(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const p = env[name];
  if (!p) return undefined;
  try {
    return fs.readFileSync(p);
  } catch (e) {
    throw new UsageError(`${name}: cannot read ${p}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

export function connectionSecurity(env: NodeJS.ProcessEnv = process.env): ConnectionSecurity {
  const ca = readPem(env, 'TEMPORAL_TLS_SERVER_CA_CERT_PATH');
  const crt = readPem(env, 'TEMPORAL_TLS_CLIENT_CERT_PATH');
  const key = readPem(env, 'TEMPORAL_TLS_CLIENT_KEY_PATH');
  if ((crt === undefined) !== (key === undefined)) {
    throw new UsageError('TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH: give both (a client certificate and its key) or neither');
  }
  const serverName = env.TEMPORAL_TLS_SERVER_NAME || undefined;
  const apiKey = env.TEMPORAL_API_KEY || undefined;
  const tlsFlag = env.TEMPORAL_TLS;
  if (tlsFlag !== undefined && tlsFlag !== '' && !['true', 'false', '1', '0'].includes(tlsFlag)) {
    throw new UsageError(`TEMPORAL_TLS: ${JSON.stringify(tlsFlag)} is not a boolean; accepted: true, false`);
  }
  const wantTls = ca !== undefined || crt !== undefined || serverName !== undefined || apiKey !== undefined || tlsFlag === 'true' || tlsFlag === '1';
  if (!wantTls) return {};
  const tls: TlsFiles = {
    ...(ca ? { serverRootCACertificate: ca } : {}),
    ...(crt && key ? { clientCertPair: { crt, key } } : {}),
    ...(serverName ? { serverNameOverride: serverName } : {}),
  };
  return { tls, ...(apiKey ? { apiKey } : {}) };
}

/**
 * With TLS configured, a failure to connect is most often the certificates (the server
 * wants a client certificate, or one of another CA): the hint appended to the one line.
 */
export function tlsFailureHint(message: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const configured = ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_SERVER_NAME', 'TEMPORAL_API_KEY', 'TEMPORAL_TLS'].some((k) => env[k]);
  if (!configured || !/connect|UNAVAILABLE|certificate|handshake|tls|ssl|socket|closed|reset|EOF|deadline/i.test(message)) return null;
  return 'with TLS: check TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH (the server may require a client certificate of its CA), TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME';
}
