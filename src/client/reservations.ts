import type { StatusView } from '../policy/status';
import type { WorkerRecord } from '../worker/registry';

// `status` joins each preparing unit with the fleet registry: the bytes it
// holds on the worker running it, or, while it sits in the task queue, the headroom a
// worker needs before it polls for it (a poll claim: the largest unit's reservation).

export function withReservations<V extends Pick<StatusView, 'table' | 'preparing'>>(view: V, records: WorkerRecord[]): V {
  const claim = records.length ? Math.min(...records.map((r) => r.claimBytes)) : undefined;
  const preparing = view.preparing.map((entry) => {
    // Holdings name "<table>: <activity id>", and a preparation's id is "prepare <unit> [range]".
    const label = `${view.table}: prepare ${entry.unitId}`;
    for (const r of records) {
      const h = r.running.find((x) => x.unit === label || x.unit?.startsWith(`${label} `));
      if (h) return { ...entry, reservedBytes: h.bytes, worker: r.identity };
    }
    return entry.queued && claim !== undefined ? { ...entry, waitingForBytes: claim } : entry;
  });
  return { ...view, preparing };
}
