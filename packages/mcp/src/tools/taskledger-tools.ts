import { InvalidRequestError, isFinal, RunNotFoundError, recoverRun } from "@taskledger/core";
import type { z } from "zod";
import { waitForRun } from "../runs/wait-for-run.js";
import { isInside } from "../security/client-roots.js";
import { launch } from "./launch-run.js";
import { toolRegistrar } from "./register-tool.js";
import { plannedOf, statusResult, usageOf } from "./result-views.js";
import { finishedReport, liveStatus, statusOf, storedState } from "./run-lookup.js";
import type { ToolContext } from "./tool-context.js";
import type { RunStatusResult } from "./tool-schemas.js";
import * as schemas from "./tool-schemas.js";

/** Registers taskledger's tools on `ctx.mcp`. */
export function registerTools(ctx: ToolContext): void {
  const tool = toolRegistrar(ctx);

  tool(
    "plan_request",
    {
      title: "Plan a request (dry run)",
      description:
        "Show the sub-tasks taskledger would split a long coding request into, without running anything. Use it to check a plan before start_run.",
      inputSchema: schemas.planInput,
      outputSchema: schemas.planOutput,
      annotations: { readOnlyHint: true },
    },
    async ({ request, directory }, { signal }) => {
      await ctx.roots.resolve(directory);
      const idle = ctx.idle.hold();
      const plan = await ctx.host.plan(request, { abortSignal: signal }).finally(idle);
      return {
        facts: plan.ledger.facts ?? [],
        subTasks: plannedOf(plan.ledger.subTasks),
        usage: usageOf(plan.usage),
        next: "Call start_run with the same request to run it.",
      };
    },
  );

  tool(
    "start_run",
    {
      title: "Start a run",
      description:
        "Hand a long coding request to taskledger: it plans it into sub-tasks, runs each in a fresh coding-agent session, checks and retries them. Returns the run id at once; the run goes on in the background. Then call wait_for_run.",
      inputSchema: schemas.startInput,
      outputSchema: schemas.startOutput,
    },
    async ({ request, directory, review }) => {
      const cwd = await ctx.roots.resolve(directory);
      const { run } = await launch(ctx, cwd, review, (options) =>
        ctx.host.start(request, { ...options, cwd }),
      );
      ctx.log(`started run ${run.runId} in ${cwd}`);
      return {
        runId: run.runId,
        status: "planning" as const,
        directory: cwd,
        next: `Call wait_for_run with runId "${run.runId}".`,
      };
    },
  );

  tool(
    "get_run_status",
    {
      title: "A run's status",
      description:
        "Where a run stands now: each sub-task's status, what runs, tokens and cost so far, and the plan review waiting for an answer, if any. Returns at once.",
      inputSchema: schemas.runIdInput,
      outputSchema: schemas.runStatusSchema,
      annotations: { readOnlyHint: true },
    },
    async ({ runId }) => statusOf(ctx, runId),
  );

  tool(
    "wait_for_run",
    {
      title: "Wait for a run",
      description:
        "Wait until a run finishes, needs its plan reviewed, or timeoutSeconds pass (default 45), sending progress meanwhile. Returns the status, and the report when it finished. Call it again while the status is planning or running.",
      inputSchema: schemas.waitInput,
      outputSchema: schemas.waitOutput,
      annotations: { readOnlyHint: true },
    },
    async ({ runId, timeoutSeconds }, { signal, progress }) => {
      const live = ctx.runs.get(runId);
      if (!live || live.ended) {
        const status = await statusOf(ctx, runId);
        const report = await finishedReport(ctx, runId);
        return { outcome: outcomeOf(status.status), status, report };
      }
      const timeoutMs = Math.min(
        timeoutSeconds === undefined ? ctx.defaultWaitMs : timeoutSeconds * 1000,
        ctx.maxWaitMs,
      );
      const outcome = await waitForRun(live, {
        timeoutMs,
        abortSignal: signal,
        progress: progress
          ? (done, total) => progress(done, total, progressLine(liveStatus(live)))
          : undefined,
        position: () => liveStatus(live),
      });
      const status = await statusOf(ctx, runId);
      return {
        outcome: outcome === "finished" ? outcomeOf(status.status) : outcome,
        status,
        report: outcome === "finished" ? await finishedReport(ctx, runId) : undefined,
      };
    },
  );

  tool(
    "answer_plan_review",
    {
      title: "Answer a plan review",
      description:
        "Approve, edit or reject the plan a run waits on (its status shows it with a reviewId). With edit, pass the whole plan as subTasks; it is validated like a generated one. A review is answered once.",
      inputSchema: schemas.answerInput,
      outputSchema: schemas.answerOutput,
    },
    async ({ runId, reviewId, action, subTasks, reason }) => {
      const live = ctx.runs.get(runId);
      if (!live || live.ended)
        throw new InvalidRequestError(`Run ${runId} is not waiting for a review in this server.`);
      const pending = live.reviews.pending;
      if (!pending)
        throw new InvalidRequestError(
          `Run ${runId} has no plan review waiting (it is ${liveStatus(live).status}); a review is answered once.`,
        );
      if (pending.id !== reviewId)
        throw new InvalidRequestError(
          `Run ${runId} waits on review "${pending.id}", not "${reviewId}"; get_run_status shows it.`,
        );
      if (action === "edit" && !subTasks)
        throw new InvalidRequestError("An edit needs subTasks: the whole plan to run.");
      const answered = live.reviews.answer({
        id: reviewId,
        action,
        ...(subTasks ? { ledger: { subTasks } } : {}),
        ...(reason ? { reason } : {}),
      });
      if (!answered.ok) throw new InvalidRequestError(answered.error);
      return {
        runId,
        action,
        next:
          action === "reject"
            ? "The run stops; its report says why."
            : `Call wait_for_run with runId "${runId}".`,
      };
    },
  );

  tool(
    "cancel_run",
    {
      title: "Cancel a run",
      description:
        "Stop a run of this server: running agents are stopped, finished sub-tasks are kept, and resume_run can continue it later.",
      inputSchema: schemas.runIdInput,
      outputSchema: schemas.cancelOutput,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ runId }) => {
      const live = ctx.runs.get(runId);
      if (!live) {
        const status = await statusOf(ctx, runId);
        if (status.status === "running" || status.status === "planning")
          throw new InvalidRequestError(
            `Run ${runId} runs in another process; cancel it there (Ctrl-C).`,
          );
        return { runId, status: status.status, next: status.next };
      }
      live.controller.abort();
      await live.run.result.catch(() => {});
      const status = await statusOf(ctx, runId);
      return { runId, status: status.status, next: status.next };
    },
  );

  tool(
    "list_runs",
    {
      title: "List runs",
      description:
        "The newest runs whose directory is inside your roots, with their status. Use it to find a run id.",
      inputSchema: schemas.listInput,
      outputSchema: schemas.listOutput,
      annotations: { readOnlyHint: true },
    },
    async ({ limit }) => {
      const roots = await ctx.roots.directories();
      const runs: z.infer<typeof schemas.listOutput>["runs"] = [];
      // Bounded: only so many logs are read to fill the list.
      for (const runId of (await ctx.catalog.runIds()).slice(0, 200)) {
        if (runs.length >= limit) break;
        const state = await storedState(ctx, runId).catch(() => undefined);
        if (!state?.cwd || !roots.some((root) => isInside(state.cwd!, root))) continue;
        const status = await statusOf(ctx, runId, state);
        const log = await ctx.catalog.get(runId);
        runs.push({
          runId,
          status: status.status,
          request: status.request.slice(0, schemas.limits.short),
          directory: status.directory,
          done: status.done,
          total: status.total,
          startedAt: log?.startedAt,
        });
      }
      return { runs, store: ctx.host.storeDirectory };
    },
  );

  tool(
    "get_run_report",
    {
      title: "A finished run's report",
      description:
        "What a finished run did: each sub-task's outcome and summary, the files it changed, the git branch holding the result and whether it was applied to the working tree, tokens and cost.",
      inputSchema: schemas.runIdInput,
      outputSchema: schemas.runReportSchema,
      annotations: { readOnlyHint: true },
    },
    async ({ runId }) => {
      const report = await finishedReport(ctx, runId);
      if (report) return report;
      const status = await statusOf(ctx, runId);
      throw new InvalidRequestError(
        `Run ${runId} has not finished (it is ${status.status}). ${status.next}`,
      );
    },
  );

  tool(
    "resume_run",
    {
      title: "Resume a stopped run",
      description:
        "Continue a stopped or cancelled run from its log: completed sub-tasks are kept, the rest run. Returns at once; then call wait_for_run.",
      inputSchema: { ...schemas.runIdInput, review: schemas.startInput.review },
      outputSchema: schemas.resumeOutput,
    },
    async ({ runId, review }) => {
      const current = ctx.runs.get(runId);
      if (current && !current.ended)
        throw new InvalidRequestError(`Run ${runId} is already running in this server.`);
      if (await ctx.catalog.isActive(runId))
        throw new InvalidRequestError(`Run ${runId} is running in another process.`);
      const history = await ctx.host.store.read(runId);
      if (history.length === 0) throw new RunNotFoundError(runId);
      const recovered = recoverRun(history, runId);
      if (isFinal(recovered)) {
        const status = await statusOf(ctx, runId);
        return {
          runId,
          status: status.status,
          done: status.done,
          total: status.total,
          next: status.next,
        };
      }
      // Where it works must still be inside the roots: a run never leaves them by being resumed.
      const directory = await ctx.roots.resolve(recovered.cwd);
      await launch(
        ctx,
        directory,
        review,
        (options) => ctx.host.resume(runId, { ...options, history, cwd: directory }),
        recovered,
      );
      ctx.log(`resumed run ${runId} in ${directory}`);
      const status = statusResult(recovered, true, undefined);
      return {
        runId,
        status: "running" as const,
        done: status.done,
        total: status.total,
        next: `Call wait_for_run with runId "${runId}".`,
      };
    },
  );
}

/** Why a wait on a run that is not running here ends: it finished, or it waits to be resumed. */
function outcomeOf(
  status: RunStatusResult["status"],
): z.infer<typeof schemas.waitOutput>["outcome"] {
  if (status === "awaiting-review") return "awaiting-review";
  if (status === "stopped" || status === "cancelled") return "stopped";
  // Running in another process: this server cannot follow it.
  if (status === "running" || status === "planning") return "timed-out";
  return "finished";
}

function progressLine(status: ReturnType<typeof statusResult>): string {
  const running = status.running.map((r) => `${r.id} (attempt ${r.attempt})`).join(", ");
  const cost =
    status.usage.costUsd === undefined ? "" : `, $${status.usage.costUsd.toFixed(4)} so far`;
  return `run ${status.runId} ${status.status}: ${status.done}/${status.total} sub-tasks done${running ? `; running ${running}` : ""}${cost}`;
}
