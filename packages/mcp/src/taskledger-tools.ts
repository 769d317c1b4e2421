import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import {
  clipMiddle,
  createRunState,
  InvalidRequestError,
  isFinal,
  type ReviewPlan,
  RunNotFoundError,
  type RunState,
  recoverRun,
  type TaskRun,
} from "@taskledger/core";
import { firstAnswer, ReviewBroker, type RunCatalog } from "@taskledger/ui";
import type { ZodRawShape, z } from "zod";
import { type ClientRoots, isInside } from "./client-roots.js";
import { canElicit, elicitReview } from "./elicit-review.js";
import type { LiveRun, LiveRuns } from "./live-runs.js";
import { redact } from "./redact.js";
import { plannedOf, reportResult, statusResult, usageOf } from "./result-views.js";
import type { RunHost } from "./run-host.js";
import type { RunStatusResult } from "./tool-schemas.js";
import * as schemas from "./tool-schemas.js";
import { waitForRun } from "./wait-for-run.js";

/** What the tools share. */
export interface ToolContext {
  host: RunHost;
  runs: LiveRuns;
  roots: ClientRoots;
  catalog: RunCatalog;
  mcp: McpServer;
  /** Values no result may show. */
  secrets: readonly string[];
  log: (line: string) => void;
  defaultWaitMs: number;
  maxWaitMs: number;
  /** How long an elicitation form may stay open before the answer tool alone is left. */
  reviewTimeoutMs: number;
}

/** Registers taskledger's tools on `ctx.mcp`. */
export function registerTools(ctx: ToolContext): void {
  const tool = <In extends ZodRawShape, Out extends z.ZodObject>(
    name: string,
    config: {
      title: string;
      description: string;
      inputSchema: In;
      outputSchema: Out;
      annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
    },
    handler: (
      args: z.infer<z.ZodObject<In>>,
      extra: { signal: AbortSignal; progress: Progress | undefined },
    ) => Promise<z.infer<Out>>,
  ) => {
    ctx.mcp.registerTool(
      name,
      { ...config, annotations: { openWorldHint: false, ...config.annotations } },
      // biome-ignore lint/suspicious/noExplicitAny: the SDK's callback type is generic over both zod versions
      (async (args: any, extra: any): Promise<CallToolResult> => {
        const token = extra._meta?.progressToken;
        const progress: Progress | undefined =
          token === undefined
            ? undefined
            : (value, total, message) =>
                extra
                  .sendNotification({
                    method: "notifications/progress",
                    params: {
                      progressToken: token,
                      progress: value,
                      total,
                      message: redact(message, ctx.secrets),
                    },
                  })
                  .catch(() => {});
        try {
          const result = redact(
            await handler(args, { signal: extra.signal, progress }),
            ctx.secrets,
          );
          return {
            content: [{ type: "text", text: JSON.stringify(result) }],
            structuredContent: result as Record<string, unknown>,
          };
        } catch (error) {
          return {
            isError: true,
            content: [
              {
                type: "text",
                text: redact(clipMiddle(messageOf(error), schemas.limits.output), ctx.secrets),
              },
            ],
          };
        }
      }) as never,
    );
  };

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
      const plan = await ctx.host.plan(request, { abortSignal: signal });
      return {
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
          ? (waited, bound) => progress(waited, bound, progressLine(liveStatus(live)))
          : undefined,
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

type Progress = (value: number, total: number, message: string) => Promise<void>;

/** Starts (or resumes) a run in `directory` as one of this server's, reviewed when `review`. */
async function launch(
  ctx: ToolContext,
  directory: string,
  review: boolean,
  begin: (options: { abortSignal: AbortSignal; reviewPlan?: ReviewPlan }) => Promise<TaskRun>,
  before?: RunState,
): Promise<LiveRun> {
  ctx.runs.checkRoom();
  const controller = new AbortController();
  const reviews = new ReviewBroker(ctx.host.maxSubTasks);
  const registered: { current?: LiveRun } = {};
  const run = await begin({
    abortSignal: controller.signal,
    ...(review ? { reviewPlan: reviewerFor(ctx, reviews, registered) } : {}),
  });
  const live = ctx.runs.add({ runId: run.runId, run, directory, before, controller, reviews });
  registered.current = live;
  live.run.result.then(
    (report) => ctx.log(`run ${live.runId} ended: ${report.status}`),
    (error: unknown) => ctx.log(`run ${live.runId} failed: ${messageOf(error)}`),
  );
  return live;
}

/**
 * The review of one run: the client's form when it has one, raced with the answer tool; `asking`
 * is set while the form is open. `live` is filled in once the run is registered.
 */
function reviewerFor(ctx: ToolContext, reviews: ReviewBroker, live: { current?: LiveRun }) {
  const server = ctx.mcp.server;
  if (!canElicit(server)) return reviews.reviewPlan;
  const form = elicitReview(server, ctx.reviewTimeoutMs);
  const raced = firstAnswer(reviews.reviewPlan, async (review) => {
    try {
      return await form(review);
    } catch (error) {
      if (!review.abortSignal.aborted)
        ctx.log(
          `the review form of run ${review.runId} got no answer (${messageOf(error)}); answer_plan_review can answer it`,
        );
      throw error;
    } finally {
      if (live.current) live.current.asking = false;
    }
  });
  return (review: Parameters<ReviewPlan>[0]) => {
    // Before the question reaches the broker, so no wait takes it for the caller's to answer.
    if (live.current) live.current.asking = true;
    return raced(review);
  };
}

function liveStatus(live: LiveRun) {
  const state = live.run.snapshot() ?? live.before ?? blankState(live);
  return statusResult(state, !live.ended, live.reviews.pending, live.ended?.error);
}

function blankState(live: LiveRun): RunState {
  return { ...createRunState(live.runId), cwd: live.directory };
}

async function storedState(ctx: ToolContext, runId: string): Promise<RunState | undefined> {
  const log = await ctx.catalog.get(runId);
  return log && log.state.nextSeq > 0 ? log.state : undefined;
}

async function statusOf(ctx: ToolContext, runId: string, stored?: RunState) {
  const live = ctx.runs.get(runId);
  if (live && !live.ended) return liveStatus(live);
  const state = stored ?? (await storedState(ctx, runId));
  if (!state) {
    if (live) return liveStatus(live);
    throw new RunNotFoundError(runId);
  }
  return statusResult(state, await ctx.catalog.isActive(runId), undefined, live?.ended?.error);
}

async function finishedReport(ctx: ToolContext, runId: string) {
  const live = ctx.runs.get(runId);
  if (live?.ended?.report) return reportResult(live.ended.report, live.directory);
  const state = await storedState(ctx, runId);
  return state?.report ? reportResult(state.report, state.cwd) : undefined;
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
  return `${status.status}: ${status.done}/${status.total} sub-tasks done${running ? `; running ${running}` : ""}${cost}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
