import { NativeConnection } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, inject } from 'vitest';
import { connectClient } from '../../src/client/connect';
import { installQuietRuntime } from '../../src/worker/runtime';

/** A client and a worker connection to the suite's server for the calling file: opened before its tests, closed after; read them inside tests. */
export function useServerClients(): { client: Client; connection: NativeConnection } {
  const opened = {} as { client: Client; connection: NativeConnection };
  beforeAll(async () => {
    installQuietRuntime();
    opened.client = await connectClient({ address: inject('temporalAddress'), namespace: 'default' });
    opened.connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await opened.connection?.close();
    await opened.client?.connection.close();
  });
  return opened;
}
