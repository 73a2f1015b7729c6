import { Client, Connection } from '@temporalio/client';

export interface ClientOptions {
  address: string;
  namespace: string;
}

/** A client on its own connection; close() with `client.connection.close()`. */
export async function connectClient(opts: ClientOptions): Promise<Client> {
  const connection = await Connection.connect({ address: opts.address });
  return new Client({ connection, namespace: opts.namespace });
}
