import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  makeContinueAsNewFunc,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { applyOverride, defaultPolicy, type PolicyOverride } from '../src/config/policy-schema';
import {
  addRateSample,
  canonicalOrder,
  carryOver,
  estimateDrain,
  CARRIED_FORMAT,
  initialState,
  parseCarried,
  rateSample,
  recordGrants,
  statusView,
  stepAll,
  emptyLog,
  predictedRewriteBytes,
  recordDecision,
  recordSample,
  type AdoptedLog,
  type Carried,
  type DrainEstimate,
  type Grant,
  type RateSample,
} from '../src/policy';
import { emptyHistory, writeAmplification } from '../src/policy/unit-history';
import { emptyDemandRecord } from '../src/policy/demand-record';
import { journalActivation, type Journal } from '../src/policy/unit-journal';
import type { Decision, PolicyEvent, TableState, Unit } from '../src/policy/types';
import { checkAwaitMerged, checkSignal, type SignalName } from '../src/messages/message-check';
import * as msg from './messages';
import { commitBytes, commitUnit, prepareUnit, runSnapshot } from './run-unit';
import { commitAdopted, prepareAdopted, runObserve } from './adopted-units';
import { Alarm } from './alarm';
import { awaitMergedTimer } from './timers';
import { activationSettled } from './activation';
import { createUiPublisher } from './ui';
import { createMetricsPublisher } from './metrics';

export interface TableWorkflowArgs {
  table: string;
  key: string;
  shards: string[];
  /** Per-table overrides of the global policy, applied at start. */
  policy?: PolicyOverride;
  /**
   * Carried across continue-as-new: the contract between releases (src/policy/carried.ts).
   * A run of the previous release may have written it, so it is parsed before use.
   */
  carried?: Carried;
  /** Continue as new once history reaches this many events (default RUN_EVENTS_BOUND; tests set less). */
  continueAsNewAtEvents?: number;
  /** Tests only: bound of the signal inbox (default MAX_INBOX). */
  maxInbox?: number;
  /** Tests only: bound of one awaitMerged wait (default AWAIT_MERGED_BOUND_SECS). */
  awaitMergedBoundSecs?: number;
  /** An adopted table (`table adopt`): written by others, found at this URI; shards is empty. */
  adopted?: { uri: string };
  /** How many indices the table's table.json configures as the run starts (none: index plans only when bumped); a start without it learns that from the first index plan. */
  configuredIndices?: number;
}

const MAX_INBOX = 10_000;
/**
 * A run continues as new at this many history events even before Temporal suggests it
 * (4,096 events). A worker that loses its cache replays the whole run, about 1-2 ms per
 * signal on a loaded 2-core machine; a burst of signals makes each workflow task carry
 * hundreds of them and the replay of a long run can outlast the task timeout. And a
 * signal that arrives during a run's last workflow task makes Temporal refuse its
 * continue-as-new, and the worker then evicts the run and replays it whole before trying
 * again: under a hot writer that cost ~3 s per attempt at 2,000 events, and a unit ready
 * meanwhile waited up to 7.5 s (merges 6.3 s) for the next run. At 500 events a replay is
 * ~0.6 s: 4.3 s and 2.4 s in the same test.
 */
const RUN_EVENTS_BOUND = 500;
/** Longest an awaitMerged update waits before answering "not yet" (README: hostile clients). */
export const AWAIT_MERGED_BOUND_SECS = 20;

/**
 * The table workflow, id `table/<name>`: a thin shell around the pure core in
 * src/policy. Signals, updates, activity results and the one durable timer become
 * events; the core's decisions become activities, a timer and UI updates.
 */
export async function tableWorkflow(args: TableWorkflowArgs): Promise<void> {
  let st: TableState;
  let carried: Carried | null = null;
  if (args.carried) {
    // What the run before handed on, maybe a run of the previous release: a state this
    // release cannot read fails the run (a throw of anything else would fail its workflow
    // task over and over).
    const c = parseCarried(args.carried);
    if (!c.ok) throw ApplicationFailure.nonRetryable(c.error, 'InvalidCarriedState');
    carried = c.carried;
    st = carried.state;
  } else {
    const policy = applyOverride(defaultPolicy(), args.policy ?? {});
    if (!policy.ok) throw ApplicationFailure.nonRetryable(`policy: ${policy.error}`, 'InvalidPolicy');
    st = initialState({ table: args.table, key: args.key, shards: args.shards, policy: policy.policy, nowMs: Date.now(), ...(args.adopted ? { adoptedUri: args.adopted.uri } : {}), ...(args.configuredIndices !== undefined ? { configuredIndices: args.configuredIndices } : {}) });
  }
  const runEventsBound = args.continueAsNewAtEvents ?? RUN_EVENTS_BOUND;
  const stalled = new Set(carried?.stalled ?? []);
  const inbox: PolicyEvent[] = [{ type: 'timer' }];
  const alarm = new Alarm();
  const publishToUi = createUiPublisher();

  // The drain ETA's window of rate samples and the record of the last turn grants: kept
  // by the shell (the core's decisions do not depend on them), carried across continue-as-new.
  let rates: RateSample[] = carried?.rates ?? [];
  let grants: Grant[] = carried?.grants ?? [];
  // Adopted tables: what was decided and how the table moved, for shadow-report.
  let adoptedLog: AdoptedLog | undefined = carried?.adoptedLog ?? (st.adopted ? emptyLog(Date.now()) : undefined);
  // What ran, at what cost, and the demand it served: for `history` and `policy --dry-run`.
  let journal: Journal = { running: {}, history: carried?.history ?? emptyHistory(Date.now()), demand: carried?.demand ?? emptyDemandRecord() };
  const reservedBytes = (u: Unit, riders: readonly Unit[]) => commitBytes(u, [...riders]);
  const publishMetrics = createMetricsPublisher(st, journal.history);
  const drain = () => estimateDrain(rates, rateSample(st, now()));
  // Metrics must never fail the workflow task (a failing task stalls the table).
  const publishMetricsSafely = (state: TableState, decisions: Decision[], eta: DrainEstimate) => {
    try {
      publishMetrics(state, journal.history, decisions, now(), eta);
    } catch (e) {
      log.warn('metrics not published', { error: String(e) });
    }
  };
  let commitsInFlight = 0;
  let draining = false;

  // Activity results are always queued (the turn depends on them); operator and writer
  // signals are bounded, and a dropped demand is recovered by the periodic snapshot.
  const push = (ev: PolicyEvent) => inbox.push(ev);
  // A dropped signal queues no event; this wakes the loop to publish its count anyway.
  let rejectedUnpublished = false;
  const reject = (why: string) => {
    log.warn(`signal dropped: ${why}`);
    rejectedUnpublished = true;
    st = { ...st, counters: { ...st.counters, rejectedSignals: (st.counters.rejectedSignals ?? 0) + 1 } };
  };
  const pushSignal = (ev: PolicyEvent) => {
    if (inbox.length < (args.maxInbox ?? MAX_INBOX)) inbox.push(ev);
    else reject(`inbox full (${inbox.length}), ${ev.type} dropped (the periodic snapshot recovers demand)`);
  };
  const now = () => Date.now();

  // ---- handlers: validate, then queue an event; never throw into the workflow task ----
  // Each signal is checked for shape and against the table (src/messages/message-check.ts); what
  // fails is dropped, logged and counted (status: counters.rejectedSignals).
  const onSignal = (name: SignalName) => (raw: unknown) => {
    const r = checkSignal(st, name, raw, now(), { pending: inbox });
    for (const ev of r.events) pushSignal(ev);
    for (const why of r.rejected) reject(why);
  };
  setHandler(msg.demand, onSignal('demand'));
  setHandler(msg.demands, onSignal('demands'));
  setHandler(msg.bump, onSignal('bump'));
  setHandler(msg.pause, onSignal('pause'));
  setHandler(msg.resume, onSignal('resume'));
  // Only wakes the loop: the workflow task it brings tells whether the deployment's
  // current version moved away from this run's (src/client/deployment.ts, nudgeTables).
  let versionCheck = false;
  setHandler(msg.checkVersion, () => {
    versionCheck = true;
  });
  setHandler(
    msg.setPolicy,
    (override) => {
      const r = applyOverride(st.policy, override);
      if (!r.ok) throw ApplicationFailure.nonRetryable(r.error, 'InvalidPolicy');
      push({ type: 'policyChanged', policy: r.policy });
      return r.policy;
    },
    {
      validator: (override) => {
        const r = applyOverride(st.policy, override);
        if (!r.ok) throw ApplicationFailure.nonRetryable(r.error, 'InvalidPolicy');
      },
    },
  );
  setHandler(
    msg.awaitMerged,
    async (req) => {
      const merged = () => st.shards.find((s) => s.shard === req.shard)?.mergedThroughSeq ?? 0;
      // Before continue-as-new this run stops waiting; the client repeats the update
      // against the new run (see src/client/merge-waiter.ts). An update holds one of the
      // workflow's few in-flight update slots while it waits, so it is answered ("not
      // yet": merged false) after a bound and the client asks again.
      const done = () => merged() >= req.seq || draining;
      if (!done()) await condition(done, (args.awaitMergedBoundSecs ?? AWAIT_MERGED_BOUND_SECS) * 1000, awaitMergedTimer(req));
      return { shard: req.shard, seq: req.seq, mergedThroughSeq: merged(), version: st.version, merged: merged() >= req.seq };
    },
    {
      validator: (req) => {
        const why = checkAwaitMerged(st, req);
        if (why !== null) throw ApplicationFailure.nonRetryable(why, 'InvalidRequest');
      },
    },
  );
  setHandler(
    msg.setMode,
    (mode) => {
      push({ type: 'modeChanged', mode });
      return mode;
    },
    {
      validator: (mode) => {
        if (!st.adopted) throw ApplicationFailure.nonRetryable(`table ${st.table} is not adopted: only adopted tables have a mode`, 'InvalidRequest');
        if (mode !== 'shadow' && mode !== 'active') throw ApplicationFailure.nonRetryable(`mode: ${JSON.stringify(mode)} is not valid; accepted: shadow, active`, 'InvalidRequest');
      },
    },
  );
  setHandler(msg.state, () => {
    const view = statusView(st, now());
    const pressure = { writePressure: view.writePressure, backlog: view.backlog, hardBacklog: st.policy.hardBacklog, maxWriteDelayMs: st.policy.maxWriteDelayMs };
    const h = journal.history;
    const cost = { sealedBytes: h.sealedBytes, bytesWritten: Object.fromEntries(Object.entries(h.totals).map(([k, t]) => [k, t.bytesWritten])), writeAmplification: writeAmplification(h) };
    return { ...view, stalledUnits: [...stalled], pressure, policy: st.policy, drain: drain(), grants, cost, ...(adoptedLog ? { adoptedLog } : {}) };
  });
  setHandler(msg.history, () => journal.history);
  setHandler(msg.demandRecord, () => journal.demand);

  // ---- carrying out decisions ----
  // An adopted table's commit is recorded; in shadow mode that is all, and the core
  // hears at once that it "committed" nothing, so it decides again when due. In active
  // mode it is recorded when it ends, as carried out only if it committed.
  const commitOnAdopted = (unit: Unit, why: string): void => {
    if (unit.kind === 'merge') return;
    const obs = st.adopted?.observed ?? null;
    const plan = unit.prepared as { reason?: string; predictedBytes?: number } | null;
    const decided = {
      atMs: now(),
      kind: unit.kind,
      why,
      reason: plan?.reason ?? '',
      predictedBytes: plan?.predictedBytes ?? predictedRewriteBytes(obs, unit.kind),
      version: st.version,
      fragments: obs?.fragments ?? 0,
    };
    if ((st.adopted?.mode ?? 'shadow') === 'shadow') {
      if (adoptedLog) adoptedLog = recordDecision(adoptedLog, { ...decided, carriedOut: false });
      push({ type: 'committed', unitId: unit.id, version: st.version, rows: 0, attempts: 1 });
      return;
    }
    commitsInFlight++;
    void commitAdopted(st, unit, why).then((ev) => {
      commitsInFlight--;
      if (adoptedLog) {
        adoptedLog = recordDecision(adoptedLog, { ...decided, carriedOut: ev.type === 'committed' });
        if (ev.type === 'committed' && ev.observation) adoptedLog = recordSample(adoptedLog, ev.observation, { sinceVersion: decided.version });
      }
      if (ev.type === 'commitFailed' && ev.stalled) stalled.add(ev.unitId);
      if (ev.type === 'committed') stalled.delete(ev.unitId);
      push(ev);
    });
  };
  const execute = (d: Decision) => {
    switch (d.type) {
      case 'prepare':
        void (st.adopted ? prepareAdopted(st, d.unit) : prepareUnit(st, d.unit)).then(push);
        break;
      case 'commit':
        if (st.adopted) return commitOnAdopted(d.unit, d.why);
        commitsInFlight++;
        void commitUnit(st, d.unit, d.why, d.riders ?? []).then((ev) => {
          commitsInFlight--;
          if (ev.type === 'commitFailed' && ev.stalled) stalled.add(ev.unitId);
          if (ev.type === 'committed') stalled.delete(ev.unitId);
          push(ev);
        });
        break;
      case 'snapshot':
        if (st.adopted) {
          void runObserve(st).then((ev) => {
            if (ev.type === 'observed' && adoptedLog) adoptedLog = recordSample(adoptedLog, ev.observation);
            push(ev);
          });
        } else {
          void runSnapshot(st).then(push);
        }
        break;
      case 'wakeAt':
        alarm.set(d.atMs, d.reason, d.id);
        break;
    }
  };

  for (;;) {
    await condition(() => inbox.length > 0 || alarm.fired || rejectedUnpublished || versionCheck);
    // Decisions once per activation, on all it delivered, in an order only its contents
    // decide (workflows/activation.ts, src/policy/batch-order.ts).
    await activationSettled();
    if (alarm.take()) inbox.push({ type: 'timer' });
    rejectedUnpublished = false;
    versionCheck = false;
    if (inbox.length === 0) {
      // Only dropped signals or a version check: publish counts; no step, so no command changes.
      publishMetricsSafely(st, [], drain());
    } else {
      // Everything that arrived in this activation happened at one instant: decide once.
      const batch = inbox.splice(0);
      const before = st;
      const r = stepAll(st, canonicalOrder(batch), now());
      st = r.state;
      // While draining for continue-as-new, start nothing new: carryOver() hands
      // unstarted work to the next run.
      const carriedOut = draining ? r.decisions.filter((d) => d.type === 'wakeAt') : r.decisions;
      for (const d of carriedOut) execute(d);
      journal = journalActivation(journal, { before, after: st, events: batch, decisions: carriedOut, nowMs: now(), reservedBytes });
      rates = addRateSample(rates, rateSample(st, now()));
      grants = recordGrants(grants, draining ? [] : r.decisions, now());
      const eta = drain();
      // The UI publisher (ui.ts) reads pressure, backlog, turn holder and pause flags
      // from the state after every activation.
      publishToUi(st, stalled.size > 0, now(), eta);
      publishMetricsSafely(st, draining ? [] : r.decisions, eta);
    }

    const info = workflowInfo();
    // The run is pinned to the worker version that started it; when the deployment's
    // current version moves on, it continues as new onto that one.
    const wantContinue = info.continueAsNewSuggested || info.historyLength >= runEventsBound || info.targetWorkerDeploymentVersionChanged;
    if (wantContinue) draining = true;
    if (draining && commitsInFlight === 0) {
      await condition(allHandlersFinished);
      if (inbox.length > 0) continue; // events that arrived while handlers finished
      await makeContinueAsNewFunc<typeof tableWorkflow>({ initialVersioningBehavior: 'AUTO_UPGRADE' })({ ...args, carried: { formatVersion: CARRIED_FORMAT, state: carryOver(st), stalled: [...stalled], rates, grants, history: journal.history, demand: journal.demand, ...(adoptedLog ? { adoptedLog } : {}) } });
    }
  }
}
