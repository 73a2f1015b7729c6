import { versioned } from '../config/config-schema';
import { combineOverrides, ADOPTED_POLICY, applyOverride, defaultPolicy, type PolicyOverride } from '../config/policy-schema';
import { formatBytes } from '../config/bytes';
import { UsageError } from '../messages/errors';
import { validateColumnName, validateTableName } from '../messages/names';
import { adoptedLocation, openAdopted } from '../storage/adopted-table';
import { createTableMeta } from '../storage/generation-store';
import { workflowArgsFor } from '../client/table-writer';
import { refuseOtherStorageRoot } from '../client/storage-root-check';
import type { StatusView } from '../../workflows/messages';
import type { AdoptedMode } from '../policy/types';
import { positional, required, str, type Parsed } from './args';
import { readCheckedConfig, readConfig, readJsonFile } from './context';
import { withTables } from './operator-commands';
import { formatShadowReport, shadowReport } from './shadow-report';

// `table adopt`, `mode` and `shadow-report`: Turnstile maintaining a Lance table that
// others write directly (docs/operations.md, "Adopted tables").

const asUsage = <T>(fn: () => T): T => {
  try {
    return fn();
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
};

export async function adopt(p: Parsed): Promise<void> {
  const name = asUsage(() => validateTableName(positional(p, 0, 'NAME')));
  const uri = required(p, 'uri', 'the Lance table directory, a path or s3://BUCKET/PREFIX ending in NAME.lance');
  asUsage(() => adoptedLocation(uri));
  const keyFlag = str(p, 'key');
  const key = keyFlag === undefined ? '' : asUsage(() => validateColumnName(keyFlag));
  const policyFile = str(p, 'policy');
  const own = policyFile ? (readJsonFile(policyFile, '--policy') as PolicyOverride) : {};
  const policy = combineOverrides(ADOPTED_POLICY, own);
  const checked = applyOverride(defaultPolicy(), policy);
  if (!checked.ok) throw new UsageError(`--policy: ${checked.error}`);
  const config = await readCheckedConfig();
  // Before anything is written: the table must be there and have the declared key.
  const tbl = await openAdopted(uri).catch((e: Error) => {
    throw new UsageError(`--uri: no Lance table at ${uri} (${e.message.split(/\n|\s+Caused by/)[0]})`);
  });
  if (key !== '' && !(await tbl.schema()).fields.some((f) => f.name === key)) throw new UsageError(`--key: the table at ${uri} has no column ${key}`);
  await withTables(async (t) => {
    // Before table.json exists: a table under a root no worker reads would never run.
    await refuseOtherStorageRoot(t, config.dataRoot);
    const meta = await createTableMeta(config.dataRoot, { name, key, shards: [], indices: [], policy, adopted: { uri } }).catch((e: Error) => {
      throw new UsageError(e.message);
    });
    await t.start(workflowArgsFor(meta));
  });
  console.log(`adopted ${uri} as table ${name}: shadow mode (decides and records, commits nothing); workflow table/${name}`);
  console.log(`  see what it would do: turnstile shadow-report ${name}    switch it on: turnstile mode ${name} active`);
}

export async function mode(p: Parsed): Promise<void> {
  const name = asUsage(() => validateTableName(positional(p, 0, 'NAME')));
  const want = positional(p, 1, 'MODE');
  if (want !== 'shadow' && want !== 'active') throw new UsageError(`MODE: ${JSON.stringify(want)} is not valid; accepted: shadow, active`);
  const config = readConfig();
  const now = await withTables(async (t) => {
    if (want === 'active') {
      const { workersWithoutActiveMode, ACTIVE_MODE_SINCE } = await import('../client/capabilities');
      const old = await workersWithoutActiveMode(t.client, versioned(config) ? config.temporal.deploymentName : null, config.dataRoot);
      if (old.length > 0) {
        throw new UsageError(`mode: refused: workers of ${old.join(', ')} are live and lack active mode for adopted tables (needs ${ACTIVE_MODE_SINCE} or later); stop or drain them first`);
      }
    }
    return t.setMode(name, want as AdoptedMode).catch((e: Error & { cause?: Error }) => {
      throw new UsageError(`mode: ${(e.cause?.message ?? e.message).split('\n')[0]}`);
    });
  });
  console.log(`table ${name}: mode ${now}`);
}

export async function report(p: Parsed): Promise<void> {
  const name = asUsage(() => validateTableName(positional(p, 0, 'NAME')));
  const view: StatusView = await withTables((t) => t.state(name));
  if (!view.adopted || !view.adoptedLog) throw new UsageError(`shadow-report: table ${name} is not adopted (see turnstile table adopt)`);
  const r = await shadowReport(view, await openAdopted(view.adopted.uri), Date.now());
  console.log(p.flags.json ? JSON.stringify(r, null, 2) : formatShadowReport(r, formatBytes));
}
