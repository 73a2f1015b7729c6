import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../config/config-schema';
import type { TableClient } from '../client/table-client';
import { ReadClient } from '../client/read-client';
import { UsageError } from './args';

// Everything at the edge: the config file (TURNSTILE_CONFIG) and environment are read
// here and handed to the pure loader; clients are made from the result.

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let file: unknown;
  const p = env.TURNSTILE_CONFIG;
  if (p) {
    let text: string;
    try {
      text = fs.readFileSync(p, 'utf8');
    } catch (e) {
      throw new UsageError(`TURNSTILE_CONFIG: cannot read ${p}: ${(e as Error).message}`);
    }
    try {
      file = JSON.parse(text);
    } catch (e) {
      throw new UsageError(`TURNSTILE_CONFIG: ${p} is not valid JSON: ${(e as Error).message}`);
    }
  }
  const r = loadConfig(env, file);
  if (!r.ok) throw new UsageError(`config: ${r.error}`);
  return { ...r.config, dataRoot: path.resolve(r.config.dataRoot) };
}

// Imported when first used: @temporalio/client takes ~400 ms to load (its proto root),
// which commands that only read (status) do without, through ReadClient.
export async function tableClient(config: Config): Promise<TableClient> {
  const [{ connectClient }, { TableClient: Tables }] = await Promise.all([import('../client/connect'), import('../client/table-client')]);
  const client = await connectClient(config.temporal);
  return new Tables(client, config.temporal.taskQueue);
}

/** A read-only client for the same server: see read-client.ts. */
export const readClient = (config: Config): ReadClient => new ReadClient(config.temporal.address, config.temporal.namespace);

export function readJsonFile(p: string, what: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(p, 'utf8'));
  } catch (e) {
    throw new UsageError(`${what}: cannot read JSON from ${p}: ${(e as Error).message.split('\n')[0]}`);
  }
}
