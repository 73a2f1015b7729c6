import { Client, Connection } from '@temporalio/client';
import { connectionSecurity } from './connection-security';

export interface ClientOptions {
  address: string;
  namespace: string;
}

/**
 * A client on its own connection; close() with `client.connection.close()`. TLS and the
 * API key come from the environment (connection-security.ts). `lazy` connects on the
 * first call instead: a writer starts and seals while the server is unreachable.
 */
export async function connectClient(opts: ClientOptions & { lazy?: boolean }): Promise<Client> {
  const options = { address: opts.address, ...connectionSecurity() };
  const connection = opts.lazy ? Connection.lazy(options) : await Connection.connect(options);
  return new Client({ connection, namespace: opts.namespace });
}
