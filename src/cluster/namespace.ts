import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { msToTs } from '@temporalio/common/lib/time';
import { connectionSecurity } from '../client/connection-security';
import { SEARCH_ATTRIBUTE_FLAGS } from '../../workflows/search-attributes';
import { sleep } from '../util/sleep';

// What a fresh cluster and the dev server's fresh SQLite file lack: the namespace and
// Turnstile's search attributes (the dev server registers them with this too).

async function withConnection<T>(address: string, tlsEnv: Record<string, string>, fn: (c: Connection) => Promise<T>): Promise<T> {
  const c = await Connection.connect({ address, connectTimeout: 2000, ...connectionSecurity({ ...process.env, ...tlsEnv }) });
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

async function retryUntil<T>(what: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms: ${(e as Error).message.split('\n')[0]}`);
      await sleep(500);
    }
  }
}

export function waitForFrontend(address: string, tlsEnv: Record<string, string>, timeoutMs: number): Promise<void> {
  return retryUntil(`the Temporal frontend at ${address} did not serve`, timeoutMs, () =>
    withConnection(address, tlsEnv, async (c) => {
      await c.workflowService.getSystemInfo({});
    }),
  );
}

const TYPES: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
};

const alreadyExists = (e: unknown) => /already (exists|registered)/i.test((e as Error).message);

/** Registers the namespace and the search attributes (idempotent), then waits until every frontend knows both. */
export async function registerNamespace(address: string, namespace: string, tlsEnv: Record<string, string>, frontends: string[]): Promise<void> {
  await retryUntil(`namespace ${namespace} could not be registered`, 60_000, () =>
    withConnection(address, tlsEnv, async (c) => {
      await c.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(3 * 86_400_000) }).catch((e: unknown) => {
        if (!alreadyExists(e)) throw e;
      });
    }),
  );
  const searchAttributes = Object.fromEntries(SEARCH_ATTRIBUTE_FLAGS.map((f) => f.split('=') as [string, string]).map(([n, t]) => [n, TYPES[t]!]));
  await retryUntil('search attributes could not be added', 60_000, () =>
    withConnection(address, tlsEnv, async (c) => {
      await c.operatorService.addSearchAttributes({ namespace, searchAttributes }).catch((e: unknown) => {
        if (!alreadyExists(e)) throw e;
      });
    }),
  );
  for (const f of frontends) {
    await retryUntil(`the frontend at ${f} did not know namespace ${namespace} and its search attributes`, 60_000, () =>
      withConnection(f, tlsEnv, async (c) => {
        await c.workflowService.describeNamespace({ namespace });
        const listed = await c.operatorService.listSearchAttributes({ namespace });
        const missing = Object.keys(searchAttributes).filter((n) => !(n in (listed.customAttributes ?? {})));
        if (missing.length) throw new Error(`missing search attributes ${missing.join(', ')}`);
      }),
    );
  }
}
