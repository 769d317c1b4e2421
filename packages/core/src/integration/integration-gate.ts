import { evaluationChecks } from "../attempt/evaluate-attempt.js";
import { outcomeEvaluator } from "../attempt/outcome-evaluator.js";
import { awaitProjectBaseline } from "../attempt/project-baseline.js";
import { describeError } from "../errors/describe-error.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { Check } from "../ledger/sub-task.js";
import type { GateCheckResult } from "../log/run-events.js";
import { type SubTaskState, verdictKey } from "../log/run-state.js";
import type { Landing, RunContext } from "../run/run-context.js";
import type { IntegrationMode } from "../settings/run-settings.js";
import { integrate, maxRecordedFiles } from "../workspace/attempt-workspace.js";
import { checkKey, gateChecks } from "./gate-checks.js";
import { integrationEntry } from "./integration-entry.js";

export type Verdict = { passed: boolean; results: GateCheckResult[] } | "stopped";

interface Part {
  s: SubTaskState;
  attempt: number;
  entry: ProgressEntry;
  /** Landed, sent back or stopped: resolved once, never again. */
  done: boolean;
  resolve(landing: Landing): void;
}

interface Merged {
  part: Part;
  merge: string;
  filesChanged: string[];
  tree: string | undefined;
  /** The merge holds exactly the part's own commit's tree. */
  ownTree: boolean;
}

/** The attempt name the gate's directories go by. */
export const gateId = "taskledger-gate";

// A gate run's output kept per check: the failing test's message and its stack, bounded.
const maxDetailChars = 4000;
// Merges gated together at most; a larger batch waits for the next run.
const maxBatch = 8;
// How long a batch waits for completions still being evaluated, at most, and how often it looks.
const maxArrivalWaitMs = 10_000;
const arrivalPollMs = 25;

/**
 * The integration gate: a completed sub-task's work lands on the run's branch only once the gate's
 * checks pass on the merge of the tip and that work (a speculative tip, checked in a slot). Work
 * finished while a check runs waits and is gated together (`batch`); a failing batch is bisected to
 * the part that breaks it, the others land. Verdicts are kept by tree: a result checked once, in
 * this process or before a restart, is never checked again.
 */
export class IntegrationGate {
  private readonly waiting: Part[] = [];
  private busy = false;
  private opened = 0;

  constructor(private readonly ctx: RunContext) {}

  get mode(): IntegrationMode {
    return this.ctx.settings.integration ?? "off";
  }

  /** Gates a completed attempt's work; resolves once it landed, was sent back, or the run stopped. */
  land(s: SubTaskState, attempt: number, entry: ProgressEntry): Promise<Landing> {
    if (!this.checksEach) return this.plain(s, attempt, entry);
    return new Promise<Landing>((resolve) => {
      const part: Part = {
        s,
        attempt,
        entry,
        done: false,
        resolve(landing) {
          part.done = true;
          resolve(landing);
        },
      };
      this.waiting.push(part);
      if (!this.busy) {
        this.busy = true;
        void this.drain();
      }
    });
  }

  /** Whether completions are gated as they come: a mode that does, and an evaluator to run checks. */
  get checksEach(): boolean {
    if (this.mode === "off" || this.mode === "end") return false;
    return runsChecks(this.ctx);
  }

  /**
   * Checks the final tip before the run's change is applied, whatever the mode but `off`: a
   * tip whose tree was gated already is not run again. `undefined`: nothing to check.
   */
  async checkFinal(): Promise<Verdict | undefined> {
    const { state, workspace } = this.ctx;
    if (this.mode === "off" || !runsChecks(this.ctx)) return undefined;
    if (workspace.record.kind === "worktree") {
      const tip = state.tip;
      if (!tip || tip === workspace.record.base) return undefined;
      await awaitProjectBaseline(this.ctx);
      return this.check([], tip, state.tipTree, gateChecks(this.ctx), true);
    }
    // Shared: each completion was checked in the directory as it left it, but with `end`.
    if (this.mode !== "end" || state.completionOrder.size === 0) return undefined;
    return this.check([], undefined, undefined, gateChecks(this.ctx), true);
  }

  private async plain(s: SubTaskState, attempt: number, entry: ProgressEntry): Promise<Landing> {
    const conflict = await integrate(this.ctx, s, attempt, entry);
    return conflict ? { landed: false, entry: conflict } : { landed: true };
  }

  private async drain(): Promise<void> {
    for (;;) {
      const batching = this.mode === "batch" && this.speculates();
      if (batching) await this.awaitArrivals();
      const batch = this.waiting.splice(0, batching ? maxBatch : 1);
      if (batch.length === 0) {
        this.busy = false;
        return;
      }
      try {
        await this.gateBatch(batch);
      } catch (error) {
        // Whatever went wrong is the batch's: each part is sent back saying so, none is lost.
        for (const part of batch) {
          if (part.done) continue;
          const results = [{ argv: ["(gate)"], passed: false, detail: describeError(error) }];
          await this.sendBack(part, results).catch(() => part.resolve({ stopped: true }));
        }
      }
    }
  }

  /**
   * Waits, bounded, while other sub-tasks' finished attempts are being evaluated: those that
   * complete arrive here soon, and one check run for all of them costs less than one each.
   */
  private async awaitArrivals(): Promise<void> {
    const { state, stop } = this.ctx;
    const waiting = new Set(this.waiting.map((p) => p.s.subTask.id));
    const evaluating = () =>
      [...state.subTasks.values()].some(
        (s) =>
          s.status === "running" &&
          s.finished !== undefined &&
          s.finished.entry === undefined &&
          !waiting.has(s.subTask.id),
      );
    const until = performance.now() + maxArrivalWaitMs;
    while (evaluating() && performance.now() < until && !stop.signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, arrivalPollMs));
      for (const part of this.waiting) waiting.add(part.s.subTask.id);
    }
  }

  /** With worktrees that can merge without landing; else each part is checked where it is. */
  private speculates(): boolean {
    const { workspace } = this.ctx;
    return workspace.record.kind === "worktree" && !!workspace.merge && !!workspace.advance;
  }

  private async gateBatch(batch: Part[]): Promise<void> {
    const { stop } = this.ctx;
    if (stop.signal.aborted) {
      for (const part of batch) part.resolve({ stopped: true });
      return;
    }
    await awaitProjectBaseline(this.ctx);
    const checks = gateChecks(
      this.ctx,
      batch.map((p) => p.s.subTask.id),
    );
    if (checks.length === 0) {
      for (const part of batch) part.resolve(await this.plain(part.s, part.attempt, part.entry));
      return;
    }
    if (this.speculates()) return this.landParts(batch);
    // Shared directory, or a workspace that cannot merge aside: the merge is made, then checked.
    const [part] = batch as [Part];
    if (this.ctx.workspace.record.kind === "worktree") {
      const landed = await this.plain(part.s, part.attempt, part.entry);
      return part.resolve(landed);
    }
    const verdict = await this.check([part.s.subTask.id], undefined, undefined, checks);
    if (verdict === "stopped") return part.resolve({ stopped: true });
    if (!verdict.passed) return this.sendBack(part, verdict.results);
    part.resolve(await this.plain(part.s, part.attempt, part.entry));
  }

  /**
   * Merges the parts onto the tip one after another, checks the result, and lands them all when it
   * passes; a failing batch is split in two and each half gated in turn, so the part that breaks it
   * is found in about log2(n) runs (a half whose result was already checked is not run again).
   */
  private async landParts(parts: Part[]): Promise<void> {
    const { state, workspace } = this.ctx;
    const tip = state.tip ?? (workspace.record.kind === "worktree" ? workspace.record.base : "");
    const chain: Merged[] = [];
    const later: Part[] = [];
    let at = tip;
    for (const part of parts) {
      const commit = part.s.workFrom;
      // No commit (nothing changed): nothing to merge, it lands as it is; the tip stays.
      if (!commit) {
        part.resolve(await this.plain(part.s, part.attempt, part.entry));
        continue;
      }
      const merged = await workspace.merge!({
        at,
        subTaskId: part.s.subTask.id,
        title: part.s.subTask.title,
        commit,
      });
      if (!merged.merged) {
        // Against the tip: a conflict, recorded as the plain path records it (the tip stays). Against
        // a part of this batch only: it waits for the next batch, on top of what lands now.
        if (chain.length === 0) part.resolve(await this.plain(part.s, part.attempt, part.entry));
        else later.push(part);
        continue;
      }
      chain.push({
        part,
        merge: merged.merge,
        filesChanged: merged.filesChanged,
        tree: merged.tree,
        ownTree: merged.ownTree === true,
      });
      at = merged.merge;
    }
    this.waiting.unshift(...later);
    const last = chain.at(-1);
    if (!last) return;
    const ids = chain.map((m) => m.part.s.subTask.id);
    let checks = gateChecks(this.ctx, ids);
    // Nothing landed since it started: the merge is its own tree, where its evaluation ran its own
    // checks, the run's and the project's; only the other parts' checks are left to run.
    if (chain.length === 1 && last.ownTree && last.part.s.finished?.result) {
      const ran = new Set(
        evaluationChecks(this.ctx, last.part.s, last.part.s.finished.result).map(checkKey),
      );
      checks = checks.filter((check) => !ran.has(checkKey(check)));
      if (checks.length === 0) return this.advance(tip, chain);
    }
    const verdict = await this.check(ids, last.merge, last.tree, checks);
    if (verdict === "stopped") {
      for (const m of chain) m.part.resolve({ stopped: true });
      return;
    }
    if (verdict.passed) return this.advance(tip, chain);
    // Its next attempt continues from the merged result: its own work with the others' in place.
    if (chain.length === 1) return this.sendBack(last.part, verdict.results, last.merge);
    const half = Math.ceil(chain.length / 2);
    await this.landParts(chain.slice(0, half).map((m) => m.part));
    await this.landParts(chain.slice(half).map((m) => m.part));
  }

  /** Moves the branch to the checked result, then records each part's landing in merge order. */
  private async advance(from: string, chain: Merged[]): Promise<void> {
    const { recorder, workspace } = this.ctx;
    const last = chain.at(-1)!;
    await workspace.advance!({ from, to: last.merge });
    for (const m of chain) {
      const { s, attempt, entry } = m.part;
      await recorder.record({
        type: "sub-task-completed",
        subTaskId: s.subTask.id,
        attempts: attempt,
        entry,
        workspace: {
          commit: s.workFrom!,
          merge: m.merge,
          filesChanged: m.filesChanged.slice(0, maxRecordedFiles),
          ...(m.tree ? { tree: m.tree } : {}),
        },
      });
      m.part.resolve({ landed: true });
    }
  }

  /**
   * Runs the gate's checks on `commit` (in a slot made from it) or in the shared directory, and
   * logs the verdict before anything acts on it; a tree already checked is not run again.
   */
  async check(
    parts: string[],
    commit: string | undefined,
    tree: string | undefined,
    checks: readonly Check[],
    final = false,
  ): Promise<Verdict> {
    const { state, options, workspace, stop, recorder } = this.ctx;
    const known = tree ? state.integration.verdicts.get(verdictKey(tree, checks)) : undefined;
    if (known) return known;
    if (checks.length === 0) return { passed: true, results: [] };
    const started = performance.now();
    let results: GateCheckResult[];
    let space: Awaited<ReturnType<typeof workspace.attempt>> | undefined;
    try {
      if (commit) {
        space = await workspace.attempt(
          { subTaskId: gateId, attempt: state.integration.runs + ++this.opened, from: commit },
          stop.signal,
        );
      }
      const runs = await options.evaluator.runChecks!(checks, {
        cwd: space?.cwd ?? this.ctx.input.cwd,
        abortSignal: stop.signal,
        maxDetailChars,
        ...(options.executor.guard
          ? { guardProcess: options.executor.guard.bind(options.executor) }
          : {}),
        ...(options.sandbox ? { sandbox: options.sandbox } : {}),
      });
      if (stop.signal.aborted) return "stopped";
      results = checks.map((check, i) => ({
        argv: check.type === "command" ? check.argv : [],
        passed: runs[i]?.passed ?? false,
        detail: runs[i]?.detail ?? "it did not run",
      }));
    } catch (error) {
      if (stop.signal.aborted) return "stopped";
      // No directory to check in: a verdict of this run only, never kept for the tree.
      results = [
        {
          argv: ["(gate)"],
          passed: false,
          detail: `The gate could not run: ${describeError(error)}`,
        },
      ];
      tree = undefined;
    } finally {
      await space?.dispose().catch(() => {});
    }
    const passed = results.every((r) => r.passed);
    await recorder.record({
      type: "integration-checked",
      parts,
      ...(commit ? { commit } : {}),
      ...(tree ? { tree } : {}),
      ...(final ? { final: true as const } : {}),
      passed,
      results,
      durationMs: Math.round(performance.now() - started),
    });
    return { passed, results };
  }

  /** Sends a part back through the ladder, told what failed and whose work it met. */
  private async sendBack(part: Part, results: GateCheckResult[], from?: string): Promise<void> {
    const { state, recorder } = this.ctx;
    const upstream = ancestorsOf(this.ctx, part.s.subTask.id);
    const met = [...state.completionOrder.keys()]
      .filter((id) => !upstream.has(id) && id !== part.s.subTask.id)
      .slice(-10);
    const entry = integrationEntry(part.entry, results, met, from !== undefined);
    await recorder.record({
      type: "sub-task-integration-failed",
      subTaskId: part.s.subTask.id,
      attempt: part.attempt,
      with: met,
      entry,
      ...(from ? { from } : {}),
    });
    part.resolve({ landed: false, entry });
  }
}

/** An evaluator that runs checks: core's default runs none. */
function runsChecks(ctx: RunContext): boolean {
  const { evaluator } = ctx.options;
  return evaluator.runChecks !== undefined && evaluator !== outcomeEvaluator;
}

/** Every sub-task `id` depends on, directly or not: their work is its starting point, not news. */
function ancestorsOf(ctx: RunContext, id: string): Set<string> {
  const found = new Set<string>();
  const frontier = [...(ctx.state.subTasks.get(id)?.subTask.dependsOn ?? [])];
  for (let next = frontier.pop(); next !== undefined; next = frontier.pop()) {
    if (found.has(next)) continue;
    found.add(next);
    frontier.push(...(ctx.state.subTasks.get(next)?.subTask.dependsOn ?? []));
  }
  return found;
}
