import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { applyOverride, defaultPolicy, type PolicyOverride } from '../src/config/policy-schema';
import {
  addRateSample,
  carryOver,
  estimateDrain,
  initialState,
  rateSample,
  recordGrants,
  statusView,
  stepAll,
  upgradeState,
  type CarriedState,
  type Grant,
  type RateSample,
} from '../src/policy';
import type { Decision, PolicyEvent, TableState } from '../src/policy/types';
import { awaitMergedSchema, bumpSchema, demandSchema, demandsSchema, pauseSchema } from '../src/wire';
import { formatZodError } from '../src/zod-format';
import * as msg from './messages';
import { commitUnit, prepareUnit, runSnapshot } from './run-unit';
import { Alarm } from './alarm';
import { createUiPublisher } from './ui';
import { createMetricsPublisher } from './metrics';

export interface TableWorkflowArgs {
  table: string;
  key: string;
  shards: string[];
  /** Per-table overrides of the global policy, applied at start. */
  policy?: PolicyOverride;
  /** Carried across continue-as-new (by older runs: without the fields added since, see upgradeState). */
  carried?: { state: CarriedState; stalled: string[]; rates?: RateSample[]; grants?: Grant[] };
  /** Tests only: continue as new once history reaches this many events. */
  continueAsNewAtEvents?: number;
  /** Tests only: bound of the signal inbox (default MAX_INBOX). */
  maxInbox?: number;
}

const MAX_INBOX = 10_000;

/**
 * The table workflow, id `table/<name>`: a thin shell around the pure core in
 * src/policy. Signals, updates, activity results and the one durable timer become
 * events; the core's decisions become activities, a timer and UI updates.
 */
export async function tableWorkflow(args: TableWorkflowArgs): Promise<void> {
  // Runs recorded before the idle-cost rules (adaptive snapshot period, change-driven
  // optimize/index/gc) replay with the fixed schedule they were recorded with.
  const adaptive = patched('idle-cost');
  let st: TableState;
  if (args.carried) {
    st = upgradeState(args.carried.state, defaultPolicy(), adaptive);
  } else {
    const policy = applyOverride(defaultPolicy(), args.policy ?? {});
    if (!policy.ok) throw ApplicationFailure.nonRetryable(`policy: ${policy.error}`, 'InvalidPolicy');
    st = initialState({ table: args.table, key: args.key, shards: args.shards, policy: policy.policy, nowMs: Date.now(), adaptive });
  }
  // Grouped merge commits (src/policy/evaluate.ts) and pipelined merges (units.ts)
  // change which activities a run schedules, so runs recorded before them replay without.
  st = { ...st, groupMerges: patched('group-merge-commits'), pipelineMerges: patched('pipelined-merges') };
  const stalled = new Set(args.carried?.stalled ?? []);
  const inbox: PolicyEvent[] = [{ type: 'timer' }];
  const alarm = new Alarm();
  const publishToUi = createUiPublisher();
  const publishMetrics = createMetricsPublisher(st);
  // The drain ETA's window of rate samples and the record of the last turn grants: kept
  // by the shell (the core's decisions do not depend on them), carried across continue-as-new.
  let rates: RateSample[] = args.carried?.rates ?? [];
  let grants: Grant[] = args.carried?.grants ?? [];
  const drain = () => estimateDrain(rates, rateSample(st, now()));
  let commitsInFlight = 0;
  let draining = false;

  // Activity results are always queued (the turn depends on them); operator and writer
  // signals are bounded, and a dropped demand is recovered by the periodic snapshot.
  const push = (ev: PolicyEvent) => inbox.push(ev);
  const pushSignal = (ev: PolicyEvent) => {
    if (inbox.length < (args.maxInbox ?? MAX_INBOX)) inbox.push(ev);
    else log.warn('inbox full, signal dropped (the periodic snapshot recovers demand)', { type: ev.type });
  };
  const now = () => Date.now();

  // ---- handlers: validate, then queue an event; never throw into the workflow task ----
  setHandler(msg.demand, (d) => {
    const r = demandSchema.safeParse(d);
    if (r.success) pushSignal({ type: 'demand', ...r.data });
    else log.warn('invalid demand signal ignored', { error: formatZodError(r.error) });
  });
  setHandler(msg.demands, (ds) => {
    const r = demandsSchema.safeParse(ds);
    if (r.success) for (const d of r.data) pushSignal({ type: 'demand', ...d });
    else log.warn('invalid demands signal ignored', { error: formatZodError(r.error) });
  });
  setHandler(msg.bump, (b) => {
    const r = bumpSchema.safeParse(b);
    if (!r.success) return log.warn('invalid bump signal ignored', { error: formatZodError(r.error) });
    const target = r.data.kind ? { kind: r.data.kind } : { unitId: r.data.unitId! };
    pushSignal({ type: 'bump', bump: { target, class: r.data.class, reason: r.data.reason, expiresAtMs: now() + r.data.forSecs * 1000 } });
  });
  setHandler(msg.pause, (p) => {
    const r = pauseSchema.safeParse(p ?? {});
    if (r.success) pushSignal({ type: 'pause', kind: r.data.kind });
    else log.warn('invalid pause signal ignored', { error: formatZodError(r.error) });
  });
  setHandler(msg.resume, (p) => {
    const r = pauseSchema.safeParse(p ?? {});
    if (r.success) pushSignal({ type: 'resume', kind: r.data.kind });
    else log.warn('invalid resume signal ignored', { error: formatZodError(r.error) });
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
      // against the new run (see src/client/merge-waiter.ts).
      await condition(() => merged() >= req.seq || draining);
      return { shard: req.shard, seq: req.seq, mergedThroughSeq: merged(), version: st.version, merged: merged() >= req.seq };
    },
    {
      validator: (req) => {
        const r = awaitMergedSchema.safeParse(req);
        if (!r.success) throw ApplicationFailure.nonRetryable(`awaitMerged: ${formatZodError(r.error)}`, 'InvalidRequest');
      },
    },
  );
  setHandler(msg.state, () => {
    const view = statusView(st, now());
    const pressure = { writePressure: view.writePressure, backlog: view.backlog, hardBacklog: st.policy.hardBacklog, maxWriteDelayMs: st.policy.maxWriteDelayMs };
    return { ...view, stalledUnits: [...stalled], pressure, policy: st.policy, drain: drain(), grants };
  });

  // ---- carrying out decisions ----
  const execute = (d: Decision) => {
    switch (d.type) {
      case 'prepare':
        void prepareUnit(st, d.unit).then(push);
        break;
      case 'commit':
        commitsInFlight++;
        void commitUnit(st, d.unit, d.why, d.riders ?? []).then((ev) => {
          commitsInFlight--;
          if (ev.type === 'commitFailed' && ev.stalled) stalled.add(ev.unitId);
          if (ev.type === 'committed') stalled.delete(ev.unitId);
          push(ev);
        });
        break;
      case 'snapshot':
        void runSnapshot(st.table).then(push);
        break;
      case 'wakeAt':
        alarm.set(d.atMs);
        break;
    }
  };

  for (;;) {
    await condition(() => inbox.length > 0 || alarm.fired);
    if (alarm.take()) inbox.push({ type: 'timer' });

    // Everything that arrived in this activation happened at one instant: decide once.
    const r = stepAll(st, inbox.splice(0), now());
    st = r.state;
    // While draining for continue-as-new, start nothing new: carryOver() hands
    // unstarted work to the next run.
    for (const d of r.decisions) if (!draining || d.type === 'wakeAt') execute(d);
    rates = addRateSample(rates, rateSample(st, now()));
    grants = recordGrants(grants, draining ? [] : r.decisions, now());
    const eta = drain();
    // The UI publisher (ui.ts) reads pressure, backlog, turn holder and pause flags
    // from the state after every activation.
    publishToUi(st, stalled.size > 0, now(), eta);
    // Metrics must never fail the workflow task (a failing task stalls the table).
    try {
      publishMetrics(st, draining ? [] : r.decisions, now(), eta);
    } catch (e) {
      log.warn('metrics not published', { error: String(e) });
    }

    const info = workflowInfo();
    const wantContinue = info.continueAsNewSuggested || (args.continueAsNewAtEvents !== undefined && info.historyLength >= args.continueAsNewAtEvents);
    if (wantContinue) draining = true;
    if (draining && commitsInFlight === 0) {
      await condition(allHandlersFinished);
      if (inbox.length > 0) continue; // events that arrived while handlers finished
      await continueAsNew<typeof tableWorkflow>({ ...args, carried: { state: carryOver(st), stalled: [...stalled], rates, grants } });
    }
  }
}
