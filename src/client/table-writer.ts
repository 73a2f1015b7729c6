import type { TableMeta } from '../storage/generation-store';
import { openTable, type TableHandle } from '../storage/table-handle';
import { writeGeneration, type WritePressure, type WriteGenerationResult } from '../writer';
import type { ArrowTable } from '../storage/arrow';
import type { Row } from '../storage/records';
import type { TableWorkflowArgs } from '../../workflows';
import type { TableClient } from './table-client';
import { DemandSender } from './demand-sender';
import { writeRouted, type RoutedWriteResult } from '../writer/write-routed';
import { settleSealedHints } from '../storage/sealed-hint';
import { refuseOtherStorageRoot } from './storage-root-check';

// A writer bound to one table: seals generations into the store, sends the demand with
// signal-with-start (so the first write also starts the table's workflow) in the
// background, and carries the table's last published write pressure into the next seal.

/** The workflow's start arguments; used by signal-with-start only when it is not running. */
export const workflowArgsFor = (meta: TableMeta): TableWorkflowArgs => ({
  table: meta.name,
  key: meta.key,
  shards: meta.shards,
  ...(meta.policy ? { policy: meta.policy } : {}),
  ...(meta.adopted ? { adopted: meta.adopted } : {}),
  configuredIndices: meta.indices.length,
});

/** How stale the pressure a writer acts on may be: one read of it per writer per interval. */
const PRESSURE_REFRESH_MS = 500;
/** How stale the pressure's limits (hardBacklog, maxWriteDelayMs: the table's policy) may be while the pressure is above 0: one query per writer per interval. */
const LIMITS_REFRESH_MS = 30_000;
/** A pressure read gives up after this long: an unreachable cluster must not stall seals. */
const PRESSURE_READ_TIMEOUT_MS = 2000;

export class TableWriter {
  private pressure: WritePressure | undefined;
  private pressureAtMs = 0;
  private limitsAtMs = 0;
  private refreshing: Promise<unknown> | null = null;
  /** Demand goes out in the background, coalesced: see demand-sender.ts. */
  readonly demand: DemandSender;

  /** table.json as the writer opened it: name, key and shards never change. */
  readonly meta: TableMeta;

  private constructor(
    private readonly tables: TableClient,
    /** Opened once: every seal of this writer goes through it. */
    readonly table: TableHandle,
  ) {
    this.meta = table.meta;
    this.demand = new DemandSender((ds) => this.tables.demands(workflowArgsFor(this.meta), ds));
  }

  /**
   * Opens the table under `root` for writing. Refused (StorageRootMismatchError) when
   * the workers of the client's task queue use another storage root: their merges would
   * never see these seals (storage-root-check.ts). The check and the read of table.json
   * run together; a refused root is reported before a table missing under it.
   */
  static async open(tables: TableClient, root: string, table: string): Promise<TableWriter> {
    const [opened, checked] = await Promise.allSettled([openTable(root, table), refuseOtherStorageRoot(tables, root)]);
    if (checked.status === 'rejected') throw checked.reason;
    if (opened.status === 'rejected') throw opened.reason;
    const h = opened.value;
    if (h.meta.adopted) throw new Error(`table ${table} is adopted: its writers write to ${h.meta.adopted.uri} directly, not through generations`);
    return new TableWriter(tables, h);
  }

  /**
   * Asks the table for its pressure now (a query); used before the first seal. When the
   * table has no workflow yet there is nothing to wait for (undefined). When Temporal
   * does not answer within 2 s (an outage) the last known pressure stays in force, and
   * hardBacklog refuses on it as usual; a writer that never got an answer seals without
   * delay (README, "Running on a cluster").
   */
  async refreshPressure(): Promise<WritePressure | undefined> {
    await this.read(async () => {
      this.pressure = (await this.tables.state(this.meta.name)).pressure;
      this.limitsAtMs = Date.now();
    });
    return this.pressure;
  }

  /**
   * The background refresh: the backlog and pressure the table publishes in its search
   * attributes (describe), with the limits (hardBacklog, maxWriteDelayMs) of the last
   * query. A query is answered by a worker and costs the server and that worker a task,
   * so it is asked only when the limits can act: while the published pressure is above 0
   * and the last answer is over 30 s old (the policy may change), or while none has
   * answered. At pressure 0 the backlog is at most softBacklog, below hardBacklog, and
   * the delay is 0 whatever the limits: a healthy table's writers never query it (a
   * steady writer sealing once a minute asked once per seal). One that reaches a worker's
   * cached run while the run's events move on is also how a copy came to decide what its
   * history cannot repeat (workflows/stale-cache-guard.ts, QUERY_TAIL). The table
   * publishes every change of pressure at once (workflows/ui.ts). write() runs it; public
   * for tests.
   */
  async refreshInBackground(): Promise<WritePressure | undefined> {
    if (!this.pressure) return this.refreshPressure();
    await this.read(async () => {
      const published = await this.tables.publishedPressure(this.meta.name);
      // A newer query may have answered meanwhile; the published numbers join its limits.
      if (published && this.pressure) this.pressure = { ...this.pressure, ...published };
    });
    if (this.pressure && this.pressure.writePressure > 0 && Date.now() - this.limitsAtMs >= LIMITS_REFRESH_MS) return this.refreshPressure();
    return this.pressure;
  }

  /**
   * The pressure before a writer's first seal. A table publishing pressure 0 gets no
   * query: at 0 the delay is 0 and the backlog is below hardBacklog whatever the limits,
   * so they are left unknown (never refusing) until the background refresh sees the
   * pressure rise and asks for them. A fleet of writers starting at once would otherwise
   * send each table's worker a query (a workflow task) before its first seal. A table
   * that has published nothing yet, or a pressure above 0, is asked as before.
   */
  private async firstPressure(): Promise<void> {
    const read = await this.read(() => this.tables.publishedPressure(this.meta.name));
    if (!read.ok) return;
    if (read.value?.writePressure === 0) this.pressure = { ...read.value, hardBacklog: Infinity, maxWriteDelayMs: 0 };
    else await this.refreshPressure();
  }

  /** One read of the table under the deadline; an unreachable cluster leaves the last known pressure in force. */
  private async read<T>(fn: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
    try {
      const value = await this.tables.client.connection.withDeadline(Date.now() + PRESSURE_READ_TIMEOUT_MS, fn);
      this.unreachable = undefined;
      return { ok: true, value };
    } catch (e) {
      if ((e as Error).name === 'WorkflowNotFoundError') this.pressure = undefined;
      else this.unreachable = (e as Error).message.split('\n')[0];
      return { ok: false };
    } finally {
      this.pressureAtMs = Date.now();
    }
  }

  /** Why the last pressure read failed (the cluster is unreachable), if it did: the pressure in force is the last known one. */
  unreachable: string | undefined;

  /**
   * Seals one generation: waits writePressure * maxWriteDelayMs first, refuses with a
   * retryable OverBacklogError at hardBacklog. Returns once the generation is durable;
   * its demand is signalled in the background (flush() waits for that). The pressure
   * acted on is the last one known, refreshed in the background every 500 ms (see
   * refreshInBackground); only a writer that never asked waits for its first answer.
   */
  async write(shard: string, rows: ArrowTable | readonly Row[]): Promise<WriteGenerationResult> {
    if (!this.meta.shards.includes(shard)) throw new Error(`--shard: ${JSON.stringify(shard)} is not a shard of ${this.meta.name}; accepted: ${this.meta.shards.join(', ')}`);
    if (this.pressureAtMs === 0) await this.firstPressure();
    else if (Date.now() - this.pressureAtMs >= PRESSURE_REFRESH_MS && !this.refreshing) {
      this.refreshing = this.refreshInBackground().finally(() => (this.refreshing = null));
    }
    return writeGeneration({
      table: this.table,
      shard,
      rows,
      pressure: this.pressure,
      signal: (d) => {
        this.demand.offer(d);
        return Promise.resolve();
      },
    });
  }

  /**
   * Seals rows of any shards: each row goes to the shard owning its key (shardOfKey),
   * one generation per shard through `write(shard, rows)`. Columns are cast losslessly to
   * the table's schema; rows that cannot be sealed throw RowsRejectedError, sealing nothing.
   */
  async writeRouted(rows: ArrowTable | readonly Row[], onSealed?: (r: RoutedWriteResult) => void): Promise<RoutedWriteResult[]> {
    return writeRouted({ table: this.table, write: (shard, part) => this.write(shard, part) }, rows, onSealed);
  }

  /**
   * Flushes (at most `flushTimeoutMs` when given), and waits for a pressure query and
   * SEALED.json hints in flight: call before closing the client's connection.
   */
  async close(flushTimeoutMs?: number): Promise<{ signalError?: string }> {
    const r = await this.flush(flushTimeoutMs);
    this.demand.stop();
    await this.refreshing;
    await settleSealedHints();
    return r;
  }

  /** Waits until the demand of every seal so far reached the table; returns the last signal failure, if any. */
  async flush(timeoutMs?: number): Promise<{ signalError?: string }> {
    const signalError = await this.demand.flush(timeoutMs);
    return signalError ? { signalError } : {};
  }
}
