import { storageAt } from '../../src/storage/open-storage';
import { dirnameLoc, basenameLoc, joinLoc } from '../../src/storage/location';
import type { Storage } from '../../src/storage/storage';

// Who wrote which bytes of a Lance table, read from the table's own files while it is
// written: each committed version's manifest names the transaction that made it, and
// the transaction (protobuf) names the operation (Update for a mergeInsert, Rewrite for
// a compaction, CreateIndex ...) and the data files it added, with their sizes. Data
// files that no committed transaction added were written by attempts that lost their
// commit (an optimize preempted by a writer, a writer's retried merge): wasted work.
// The manifests and transactions of pruned versions are deleted, so the bench scans
// every few seconds, well inside the retention.

/** Lance's operation names by their field number in the Transaction message. */
const OPS: Record<number, string> = {
  100: 'Append', 101: 'Delete', 102: 'Overwrite', 103: 'CreateIndex', 104: 'Rewrite', 105: 'Merge', 106: 'Restore', 107: 'ReserveFragments',
  108: 'Update', 109: 'Project', 110: 'UpdateConfig', 111: 'DataReplacement', 112: 'UpdateMemWalState', 113: 'Clone', 114: 'UpdateBases', 115: 'DataOverlay', 116: 'AppendFragmentReuseTransitions',
};

interface Field {
  no: number;
  /** Varint value (wire type 0), or the byte range of a length-delimited one (wire type 2). */
  int: number;
  start: number;
  end: number;
}

/** The fields of one protobuf message, top level only (nested messages are ranges to parse again). */
function* fields(buf: Buffer, start = 0, end = buf.length): Generator<Field> {
  let p = start;
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = buf[p++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  };
  while (p < end) {
    const key = varint();
    const no = Math.floor(key / 8);
    switch (key & 7) {
      case 0:
        yield { no, int: varint(), start: 0, end: 0 };
        break;
      case 1:
        p += 8;
        break;
      case 2: {
        const len = varint();
        yield { no, int: 0, start: p, end: p + len };
        p += len;
        break;
      }
      case 5:
        p += 4;
        break;
      default:
        throw new Error(`protobuf wire type ${key & 7} at ${p}: not a Lance manifest or transaction`);
    }
  }
}

const sub = (buf: Buffer, f: Field, no: number): Field[] => [...fields(buf, f.start, f.end)].filter((x) => x.no === no);

interface NewFile {
  path: string;
  /** From the transaction (DataFile.file_size_bytes); 0 when it did not record it. */
  size: number;
}

/** Data files and rows of the DataFragment messages among `frags`. */
function fragmentFiles(buf: Buffer, frags: Field[]): { files: NewFile[]; rows: number } {
  const files: NewFile[] = [];
  let rows = 0;
  for (const fr of frags) {
    for (const f of fields(buf, fr.start, fr.end)) {
      if (f.no === 4) rows += f.int;
      if (f.no !== 2) continue;
      let path = '';
      let size = 0;
      for (const d of fields(buf, f.start, f.end)) {
        if (d.no === 1) path = buf.toString('utf8', d.start, d.end);
        if (d.no === 6) size = d.int;
      }
      files.push({ path, size });
    }
  }
  return { files, rows };
}

/** The operation of a serialized Transaction and the data files it adds. */
export function parseTransaction(buf: Buffer, start = 0, end = buf.length): { op: string; files: NewFile[]; rows: number } {
  for (const f of fields(buf, start, end)) {
    const op = OPS[f.no];
    if (!op) continue;
    let added: Field[] = [];
    if (op === 'Append' || op === 'Overwrite') added = sub(buf, f, 1);
    else if (op === 'Update') added = sub(buf, f, 3);
    else if (op === 'Rewrite') added = [...sub(buf, f, 2), ...sub(buf, f, 3).flatMap((g) => sub(buf, g, 2))];
    return { op, ...fragmentFiles(buf, added) };
  }
  return { op: 'unknown', files: [], rows: 0 };
}

/** A manifest file: its version, fragment count, and where its transaction is. */
export function parseManifest(buf: Buffer): { version: number; fragments: number; transactionFile: string | null; inlineTransaction: [number, number] | null } {
  // Footer: u64 position of the manifest message, u16 major, u16 minor, "LANC".
  if (buf.length < 16 || buf.toString('latin1', buf.length - 4) !== 'LANC') throw new Error('not a Lance manifest (no LANC footer)');
  const pos = Number(buf.readBigUInt64LE(buf.length - 16));
  const len = buf.readUInt32LE(pos);
  let version = 0;
  let fragments = 0;
  let transactionFile: string | null = null;
  let inline: [number, number] | null = null;
  for (const f of fields(buf, pos + 4, pos + 4 + len)) {
    if (f.no === 3) version = f.int;
    else if (f.no === 2) fragments++;
    else if (f.no === 12 && f.end > f.start) transactionFile = buf.toString('utf8', f.start, f.end);
    else if (f.no === 21) {
      const tlen = buf.readUInt32LE(f.int);
      inline = [f.int + 4, f.int + 4 + tlen];
    }
  }
  return { version, fragments, transactionFile, inlineTransaction: inline };
}

interface Commit {
  version: number;
  op: string;
  /** Rows and data files the commit added. */
  rows: number;
  files: NewFile[];
  /** When a scan first saw it (epoch ms): within one scan period of its commit. */
  seenAt: number;
}

/** What the run added, by operation, and what no commit accounts for. */
export interface WriteAccount {
  byOp: Record<string, { commits: number; bytes: number; rows: number; files: number }>;
  /** Data files created during the run that no committed transaction added. */
  orphanBytes: number;
  orphanFiles: number;
  /** Every data file created during the run (committed or not). */
  createdBytes: number;
  createdFiles: number;
  /** Manifests that were gone before the scan read them (pruned early): their commits are not counted. */
  unread: number;
  /** Each compaction (Rewrite) commit: when a scan first saw it (epoch ms) and the rows it rewrote. */
  rewrites: { seenAt: number; rows: number }[];
}

export class TableWatch {
  private readonly store: Storage;
  private readonly dir: string;
  private readonly manifestsRead = new Set<string>();
  private readonly commits = new Map<number, Commit>();
  /** Data files by name: size, and whether they existed before the run. */
  private readonly dataFiles = new Map<string, { size: number; before: boolean }>();
  private readonly committedFiles = new Map<string, number>();
  private baselineVersion = 0;
  private unread = 0;

  constructor(readonly uri: string) {
    this.store = storageAt(dirnameLoc(uri));
    this.dir = uri;
  }

  /** Everything there now belongs to before the run. */
  async baseline(): Promise<void> {
    await this.scan(true);
    this.baselineVersion = Math.max(0, ...this.commits.keys());
  }

  /** The manifests on disk now; their count is the table's version count. */
  async manifests(): Promise<string[]> {
    return (await this.store.list(joinLoc(this.dir, '_versions'))).map((e) => e.name).filter((n) => n.endsWith('.manifest'));
  }

  /** Reads what is new: manifests (and their transactions), data files. */
  async scan(before = false): Promise<number> {
    const names = await this.manifests();
    for (const name of names) {
      if (this.manifestsRead.has(name)) continue;
      this.manifestsRead.add(name);
      const buf = await this.store.read(joinLoc(this.dir, '_versions', name));
      if (!buf) {
        this.unread++;
        continue;
      }
      const m = parseManifest(buf);
      let txn: ReturnType<typeof parseTransaction> = { op: 'unknown', files: [], rows: 0 };
      if (m.inlineTransaction) txn = parseTransaction(buf, ...m.inlineTransaction);
      else if (m.transactionFile) {
        const t = await this.store.read(joinLoc(this.dir, '_transactions', m.transactionFile));
        if (t) txn = parseTransaction(t);
        else this.unread++;
      }
      for (const f of txn.files) this.committedFiles.set(basenameLoc(f.path), f.size);
      this.commits.set(m.version, { version: m.version, op: txn.op, rows: txn.rows, files: txn.files, seenAt: Date.now() });
    }
    for (const e of await this.store.list(joinLoc(this.dir, 'data'))) {
      if (e.isDir || !e.name.endsWith('.lance') || this.dataFiles.has(e.name)) continue;
      const st = await this.store.stat(joinLoc(this.dir, 'data', e.name));
      this.dataFiles.set(e.name, { size: st?.size ?? 0, before });
    }
    return names.length;
  }

  /** The bytes each operation added during the run (after baseline), and the orphans. */
  account(): WriteAccount {
    const byOp: WriteAccount['byOp'] = {};
    const rewrites: WriteAccount['rewrites'] = [];
    const sizeOf = (name: string, recorded: number) => recorded || this.dataFiles.get(name)?.size || 0;
    for (const c of this.commits.values()) {
      if (c.version <= this.baselineVersion) continue;
      const o = (byOp[c.op] ??= { commits: 0, bytes: 0, rows: 0, files: 0 });
      o.commits++;
      o.rows += c.rows;
      o.files += c.files.length;
      for (const p of c.files) o.bytes += sizeOf(basenameLoc(p.path), p.size);
      if (c.op === 'Rewrite') rewrites.push({ seenAt: c.seenAt, rows: c.rows });
    }
    let orphanBytes = 0;
    let orphanFiles = 0;
    let createdBytes = 0;
    let createdFiles = 0;
    for (const [name, f] of this.dataFiles) {
      if (f.before) continue;
      createdBytes += f.size;
      createdFiles++;
      if (!this.committedFiles.has(name)) {
        orphanBytes += f.size;
        orphanFiles++;
      }
    }
    return { byOp, orphanBytes, orphanFiles, createdBytes, createdFiles, unread: this.unread, rewrites: rewrites.sort((a, b) => a.seenAt - b.seenAt) };
  }
}
