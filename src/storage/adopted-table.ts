import { connect, type LanceTable } from './lance-table';
import { basenameLoc, dirnameLoc, isS3, resolveLoc } from './location';

// A Lance table Turnstile did not create: `<db>/<name>.lance`, opened the way its own
// writers open it (lancedb.connect(db).openTable(name)), local or on S3.

export interface AdoptedLocation {
  /** What lancedb.connect takes. */
  db: string;
  name: string;
}

/** The table's directory as given to `table adopt --uri`; throws a one-line reason when it is not one. */
export function adoptedLocation(uri: string): AdoptedLocation {
  const loc = isS3(uri) ? uri.replace(/\/+$/, '') : resolveLoc(uri).replace(/\/+$/, '');
  const base = basenameLoc(loc);
  if (!base.endsWith('.lance') || base === '.lance') {
    throw new Error(`--uri: ${JSON.stringify(uri)} is not a Lance table directory; accepted: a path or s3://BUCKET/PREFIX ending in NAME.lance`);
  }
  return { db: dirnameLoc(loc), name: base.slice(0, -'.lance'.length) };
}

/**
 * The table at its latest version. A handle opened earlier does not see other processes'
 * commits (an optimize through it compacted nothing): every call opens one (opening
 * finds the latest version).
 */
export async function openAdopted(uri: string): Promise<LanceTable> {
  const { db, name } = adoptedLocation(uri);
  return (await connect(db)).openTable(name);
}
