import path from 'node:path';
import { PROJECT_ROOT } from '../../src/paths';

/** The Temporal CLI a bench starts its dev server with: TEMPORAL_CLI_PATH, or found/built as `npm start` does. */
export async function temporalBinary(): Promise<string> {
  if (process.env.TEMPORAL_CLI_PATH) return process.env.TEMPORAL_CLI_PATH;
  const mod = (await import(path.join(PROJECT_ROOT, 'scripts', 'ensure-temporal.mjs'))) as { ensureTemporal(): { binary?: string } };
  return mod.ensureTemporal().binary!;
}
