import type { Context, Link, Span, Tracer } from "@opentelemetry/api";
import {
  type AttemptResult,
  incompleteReasonOf,
  type RunEvent,
  type RunEventOf,
  type TraceRef,
} from "@taskledger/core";
import { splitModel, usageAttributes } from "./attributes.js";
import type { OtelApi } from "./otel-api.js";

type AgentEvent = RunEventOf<"agent-event">["event"];

/**
 * The spans of one session of one run, made from its events as they are recorded: the run is
 * `invoke_workflow`, planning and each replan a child, each attempt `invoke_agent` with its tool
 * calls as `execute_tool` children. The evaluator's verdict and the ladder's decision are
 * `taskledger.*` attributes and events of the attempt's span.
 */
export class RunTrace {
  readonly root: Span;
  readonly rootContext: Context;
  private planning: Span | undefined;
  private readonly replans = new Map<string, Span>();
  private readonly attempts = new Map<string, Span>();
  /** Attempts that ended `rate-limited`, until their `provider-limited` record (logged after) says more. */
  private readonly limitedAttempts = new Set<string>();
  /** The commands the gate's last check run failed, for the attempt it sends back next. */
  private lastGateFailures: string[] = [];
  private ended = false;

  constructor(
    private readonly api: OtelApi,
    private readonly tracer: Tracer,
    private readonly captureContent: boolean,
    runId: string | undefined,
    earlier: readonly TraceRef[],
    parent: Context,
    /** Whether an earlier session already planned the run (a resume); planning is then not traced. */
    private planned: boolean,
  ) {
    const { trace, SpanKind } = api;
    // A resumed run continues the first session's trace and links to every earlier session.
    const first = earlier[0];
    const base = first
      ? trace.setSpanContext(parent, { ...first, traceFlags: 1, isRemote: true })
      : parent;
    const links: Link[] = earlier.map((ref) => ({
      context: { ...ref, traceFlags: 1, isRemote: true },
      attributes: { "taskledger.link": "earlier-session" },
    }));
    this.root = tracer.startSpan(
      "invoke_workflow taskledger",
      {
        kind: SpanKind.INTERNAL,
        links,
        attributes: {
          "gen_ai.operation.name": "invoke_workflow",
          "gen_ai.workflow.name": "taskledger",
          ...(runId ? { "taskledger.run.id": runId } : {}),
          ...(earlier.length > 0 ? { "taskledger.resumed": true } : {}),
        },
      },
      base,
    );
    this.rootContext = trace.setSpan(parent, this.root);
  }

  /** True when a provider records the spans; otherwise the run is not followed at all. */
  get recording(): boolean {
    return this.root.isRecording();
  }

  /** This session's trace context, for the run's log. */
  get ref(): TraceRef {
    const { traceId, spanId } = this.root.spanContext();
    return { traceId, spanId };
  }

  /** Where a manager model call made in the run's own context belongs: a replan, planning, or the run. */
  chatParent(): Context {
    const replan = [...this.replans.values()].at(-1);
    const span = replan ?? this.planning;
    return span ? this.api.trace.setSpan(this.rootContext, span) : this.rootContext;
  }

  /** The context of an attempt's span, for the evaluation of that attempt. */
  attemptContext(subTaskId: string, attempt: number): Context | undefined {
    const span = this.attempts.get(key(subTaskId, attempt));
    return span ? this.api.trace.setSpan(this.rootContext, span) : undefined;
  }

  /** Applies one recorded event; a throw here would only lose a span, never hurt the run. */
  onEvent(event: RunEvent): void {
    if (this.ended) return;
    switch (event.type) {
      case "run-started":
      case "run-resumed":
        if (event.type === "run-resumed") this.root.setAttribute("taskledger.resumed", true);
        if (!this.planned) this.planning ??= this.child("planning", { "taskledger.step": "plan" });
        // Set once the first record is seen: whatever comes next is this session's own.
        this.planned = true;
        return;
      case "plan-created":
        if (!this.planning) return;
        this.planning.setAttributes({
          "taskledger.plan.sub_tasks": event.ledger.subTasks.length,
          "taskledger.plan.decomposed": event.decomposed,
          "taskledger.plan.repaired": event.repaired,
        });
        this.planning.end();
        this.planning = undefined;
        return;
      case "plan-reviewed":
        this.root.addEvent("taskledger.plan_review", {
          "taskledger.plan_review.kind": event.kind,
          "taskledger.plan_review.action": event.action,
        });
        return;
      case "sub-task-started":
        this.startAttempt(event);
        return;
      case "agent-event":
        this.onAgentEvent(event.subTaskId, event.attempt, event.event);
        return;
      case "attempt-finished":
        this.finishAttempt(event.subTaskId, event.attempt, event.result);
        return;
      case "sub-task-evaluated": {
        const span = this.attempts.get(key(event.subTaskId, event.attempt));
        const { entry } = event;
        const reason = incompleteReasonOf(entry);
        span?.setAttributes({
          "taskledger.verdict.completed": entry.completed,
          ...(reason ? { "taskledger.verdict.incomplete_reason": reason } : {}),
        });
        span?.addEvent("taskledger.verdict", {
          "taskledger.verdict.completed": entry.completed,
          ...(reason ? { "taskledger.verdict.incomplete_reason": reason } : {}),
          "taskledger.verdict.evidence_failed": entry.evidence
            .filter((item) => !item.passed)
            .map((item) => item.source),
          ...(this.captureContent ? { "taskledger.verdict.summary": entry.summary } : {}),
        });
        return;
      }
      case "integration-checked":
        this.gateRun(event);
        return;
      case "sub-task-integration-failed": {
        // Its work was judged complete, then broke the gate's checks once merged: incomplete.
        const span = this.attempts.get(key(event.subTaskId, event.attempt));
        const failed = event.entry.evidence.filter((e) => !e.passed).map((e) => e.detail);
        span?.setAttributes({
          "taskledger.verdict.completed": false,
          "taskledger.verdict.incomplete_reason": "integration",
        });
        span?.addEvent("taskledger.integration_failed", {
          "taskledger.integration.with": event.with,
          "taskledger.integration.failed": this.lastGateFailures,
          // The checks' output may quote the code: content, like the verdict's summary.
          ...(this.captureContent
            ? { "taskledger.integration.detail": failed.map((d) => d.slice(0, 1000)) }
            : {}),
        });
        return;
      }
      case "acceptance-judged":
        this.root.setAttribute("taskledger.acceptance.verdict", event.verdict);
        this.root.addEvent("taskledger.acceptance", {
          "taskledger.acceptance.round": event.round,
          "taskledger.acceptance.verdict": event.verdict,
          "taskledger.acceptance.missing_count": event.missing.length,
          ...usageAttributes(event.usage),
          ...(event.reason ? { "taskledger.acceptance.reason": event.reason } : {}),
          // What the request lacks is the judge's words about the code: content.
          ...(this.captureContent
            ? {
                "taskledger.acceptance.missing": event.missing.map((m) =>
                  `${m.what}: ${m.why}`.slice(0, 500),
                ),
              }
            : {}),
        });
        return;
      case "provider-limited":
        this.providerLimited(event);
        return;
      case "sub-task-retrying":
        this.decide(event.subTaskId, "retry");
        return;
      case "candidates-started":
        this.root.addEvent("taskledger.candidates_started", {
          "taskledger.sub_task.id": event.subTaskId,
          "taskledger.candidate.round": event.round,
          "taskledger.candidate.reason": event.reason,
          "taskledger.candidate.attempts": event.candidates.map((c) => c.attempt),
        });
        return;
      case "candidates-chosen":
        this.root.addEvent("taskledger.candidates_chosen", {
          "taskledger.sub_task.id": event.subTaskId,
          "taskledger.candidate.round": event.round,
          "taskledger.candidate.by": event.by,
          ...(event.winner === undefined ? {} : { "taskledger.candidate.winner": event.winner }),
          "taskledger.candidate.losers": event.candidates
            .filter((c) => c.attempt !== event.winner)
            .map((c) => c.attempt),
          // The judge's words may quote the code: content, like the verdict's summary.
          ...(this.captureContent
            ? {
                "taskledger.candidate.why": event.reason,
                "taskledger.candidate.lost": event.candidates
                  .filter((c) => c.attempt !== event.winner)
                  .map((c) => `${c.attempt}: ${c.lost ?? ""}`.slice(0, 300)),
              }
            : {}),
        });
        return;
      case "sub-task-escalated":
        this.decide(event.subTaskId, event.step, event.reason, event.agentModel);
        if (event.step === "replan") {
          this.replans.get(event.subTaskId)?.end();
          this.replans.set(
            event.subTaskId,
            this.child(`replanning ${event.subTaskId}`, {
              "taskledger.step": "replan",
              "taskledger.sub_task.id": event.subTaskId,
            }),
          );
        }
        return;
      case "plan-revised": {
        if (event.acceptance !== undefined) {
          this.root.addEvent("taskledger.acceptance_continued", {
            "taskledger.acceptance.round": event.acceptance,
            "taskledger.acceptance.added": event.added,
          });
        }
        for (const id of event.replaced) {
          const span = this.replans.get(id);
          if (!span) continue;
          span.setAttributes({
            "taskledger.replan.replaced": event.replaced,
            "taskledger.replan.added": event.added,
          });
          span.end();
          this.replans.delete(id);
        }
        return;
      }
      case "sub-task-completed":
        this.decide(event.subTaskId, "complete");
        return;
      case "sub-task-failed":
        this.decide(event.subTaskId, "fail", event.reason);
        this.endReplan(event.subTaskId, event.reason);
        return;
      case "sub-task-cancelled":
        this.decide(event.subTaskId, "cancel", event.reason);
        this.endReplan(event.subTaskId, event.reason);
        return;
      case "sub-task-skipped":
        this.root.addEvent("taskledger.sub_task_skipped", {
          "taskledger.sub_task.id": event.subTaskId,
          "taskledger.sub_task.blocked_by": event.blockedBy,
        });
        return;
      case "budget-exhausted":
        this.root.addEvent("taskledger.budget_exhausted", {
          "taskledger.budget.kind": event.kind,
          "taskledger.budget.limit": event.limit,
          "taskledger.budget.used": event.used,
        });
        return;
      case "run-finished": {
        const { report } = event;
        this.root.setAttributes({
          "taskledger.run.status": report.status,
          ...(report.integration
            ? {
                "taskledger.integration.mode": report.integration.mode,
                "taskledger.integration.runs": report.integration.runs,
                "taskledger.integration.failures": report.integration.failures.length,
                ...(report.integration.final
                  ? { "taskledger.integration.final_passed": report.integration.final.passed }
                  : {}),
              }
            : {}),
          ...(report.acceptance
            ? {
                "taskledger.acceptance.verdict": report.acceptance.verdict,
                "taskledger.acceptance.rounds": report.acceptance.rounds,
              }
            : {}),
          ...(report.providers
            ? {
                "taskledger.provider_limit.waits": sum(report.providers, (p) => p.waits),
                "taskledger.provider_limit.waited_ms": sum(report.providers, (p) => p.waitedMs),
                "taskledger.provider_limit.rejected": sum(report.providers, (p) => p.rejected),
              }
            : {}),
          ...usageAttributes(report.usage.total),
          ...prefixed("taskledger.usage.manager.", report.usage.manager),
          ...prefixed("taskledger.usage.agents.", report.usage.agents),
        });
        if (report.status === "failed") {
          this.root.setStatus({
            code: this.api.SpanStatusCode.ERROR,
            message: report.reason ?? "failed",
          });
        }
        this.end();
        return;
      }
      case "run-failed":
        this.fail(event.error.code, event.error.message);
        return;
      default:
        return;
    }
  }

  /** Ends the run's span with an error (the run's promise rejected). */
  fail(code: string, message: string): void {
    if (this.ended) return;
    this.root.setAttribute("error.type", code);
    this.root.setStatus({ code: this.api.SpanStatusCode.ERROR, message });
    this.end();
  }

  /** Ends every span still open, the run's last. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.planning?.end();
    for (const span of this.replans.values()) span.end();
    for (const span of this.attempts.values()) span.end();
    this.root.end();
  }

  private child(name: string, attributes: Record<string, string | number | boolean>): Span {
    return this.tracer.startSpan(name, { attributes }, this.rootContext);
  }

  /**
   * One run of the integration gate's checks on a merged result: a span of its own, timed from
   * the record (logged once the checks ended, `durationMs` after they began).
   */
  private gateRun(event: RunEventOf<"integration-checked">): void {
    const recorded = Date.parse(event.time);
    const end = Number.isFinite(recorded) ? recorded : Date.now();
    const failed = event.results.filter((r) => !r.passed).map((r) => r.argv.join(" "));
    this.lastGateFailures = failed;
    const span = this.tracer.startSpan(
      event.final ? "integration_gate final" : "integration_gate",
      {
        startTime: end - event.durationMs,
        attributes: {
          "taskledger.step": "integration",
          "taskledger.integration.parts": event.parts,
          "taskledger.integration.final": event.final === true,
          "taskledger.integration.passed": event.passed,
          "taskledger.integration.checks": event.results.map((r) => r.argv.join(" ")),
          "taskledger.integration.failed": failed,
          "taskledger.duration_ms": event.durationMs,
          ...(event.commit ? { "taskledger.integration.commit": event.commit } : {}),
        },
      },
      this.rootContext,
    );
    span.end(end);
  }

  private startAttempt(event: RunEventOf<"sub-task-started">): void {
    const id = key(event.subTaskId, event.attempt);
    this.attempts.get(id)?.end();
    const attributes: Record<string, string | number> = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": event.subTaskId,
      "taskledger.sub_task.id": event.subTaskId,
      "taskledger.attempt": event.attempt,
      "taskledger.prompt_tokens": event.promptTokens,
      ...(event.candidate ? { "taskledger.candidate.round": event.candidate.round } : {}),
    };
    if (event.agentModel) {
      const { provider, model } = splitModel(event.agentModel);
      attributes["gen_ai.provider.name"] = provider;
      attributes["gen_ai.request.model"] = model;
    }
    const span = this.tracer.startSpan(
      `invoke_agent ${event.subTaskId}`,
      { kind: this.api.SpanKind.CLIENT, attributes },
      this.rootContext,
    );
    this.attempts.set(id, span);
  }

  private onAgentEvent(subTaskId: string, attempt: number, event: AgentEvent): void {
    const span = this.attempts.get(key(subTaskId, attempt));
    if (!span) return;
    if (event.type === "step-finish") {
      span.addEvent("taskledger.step", {
        "taskledger.step.finish_reason": event.reason,
        ...(event.usage ? usageAttributes(event.usage) : {}),
      });
      return;
    }
    if (event.type !== "tool-use") return;
    const failed = event.status === "error";
    const tool = this.tracer.startSpan(
      `execute_tool ${event.tool}`,
      {
        kind: this.api.SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": event.tool,
          "taskledger.tool.status": event.status,
          ...(failed ? { "error.type": "tool_error" } : {}),
          ...(this.captureContent
            ? { "gen_ai.tool.call.arguments": event.input, "gen_ai.tool.call.result": event.output }
            : {}),
        },
      },
      this.api.trace.setSpan(this.rootContext, span),
    );
    if (failed) tool.setStatus({ code: this.api.SpanStatusCode.ERROR });
    tool.end();
  }

  private finishAttempt(subTaskId: string, attempt: number, result: AttemptResult): void {
    const span = this.attempts.get(key(subTaskId, attempt));
    if (!span) return;
    const details = result.details ?? {};
    const attributes: Record<string, string | number | boolean | string[]> = {
      ...(usageAttributes(result.usage) as Record<string, number | string[]>),
      "taskledger.outcome": result.outcome,
      "taskledger.duration_ms": Math.round(result.durationMs),
      "taskledger.tool_calls": result.toolCalls.length,
    };
    if (typeof details.model === "string") {
      const { provider, model } = splitModel(details.model);
      attributes["gen_ai.provider.name"] = provider;
      attributes["gen_ai.request.model"] = model;
    }
    if (typeof details.sessionId === "string")
      attributes["gen_ai.conversation.id"] = details.sessionId;
    if (typeof details.executor === "string") attributes["taskledger.executor"] = details.executor;
    // Changes outside the run's directory were left out of the attempt's work: said on its span.
    if (result.outsideCwd) {
      attributes["taskledger.outside_cwd.count"] = result.outsideCwd.count;
      attributes["taskledger.outside_cwd.paths"] = result.outsideCwd.paths;
    }
    // What the OS sandbox refused the attempt: the paths written and hosts contacted.
    if (result.refusals?.length) {
      attributes["taskledger.sandbox.refusals"] = result.refusals.map(
        (r) => `${r.kind} ${r.target}`,
      );
    }
    span.setAttributes(attributes);
    if (result.outcome === "error" || result.outcome === "timeout") {
      span.setAttribute("error.type", result.outcome);
      span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: result.error ?? "" });
    }
    if (result.outcome === "rate-limited") this.limitedAttempts.add(key(subTaskId, attempt));
  }

  /**
   * A provider refused work: an event on the attempt's span it ended (the run's for the manager's
   * own call), with the limit's kind, `Retry-After`, status and the pause it caused.
   */
  private providerLimited(event: RunEventOf<"provider-limited">): void {
    const { limit } = event;
    const attempt =
      event.subTaskId === undefined || event.attempt === undefined
        ? undefined
        : key(event.subTaskId, event.attempt);
    const span = (attempt && this.attempts.get(attempt)) || this.root;
    // What the attempt's span keeps as attributes; the event carries these and the rest.
    const main = {
      "taskledger.provider_limit.provider": event.provider,
      "taskledger.provider_limit.kind": limit.kind,
      "taskledger.provider_limit.wait_ms": event.waitMs,
      ...(limit.retryAfterMs === undefined
        ? {}
        : { "taskledger.provider_limit.retry_after_ms": limit.retryAfterMs }),
      ...(limit.statusCode === undefined
        ? {}
        : { "taskledger.provider_limit.status_code": limit.statusCode }),
    };
    span.addEvent("taskledger.provider_limited", {
      ...main,
      "taskledger.provider_limit.key": event.key,
      "taskledger.provider_limit.message": limit.message,
      ...(event.until === undefined ? {} : { "taskledger.provider_limit.until": event.until }),
      ...(event.reason === undefined ? {} : { "taskledger.provider_limit.reason": event.reason }),
      ...(event.stops ? { "taskledger.provider_limit.stops": true } : {}),
      ...(event.call ? { "taskledger.provider_limit.call": event.call } : {}),
      ...(span === this.root && event.subTaskId !== undefined
        ? { "taskledger.sub_task.id": event.subTaskId }
        : {}),
    });
    if (span === this.root) return;
    span.setAttributes(main);
    // A pause: its sub-task runs again as a new attempt, no rung decides this one, so it ends here.
    if (attempt && this.limitedAttempts.delete(attempt) && event.until !== undefined) {
      span.end();
      this.attempts.delete(attempt);
    }
  }

  /** The ladder's decision on a sub-task's latest attempt; it closes that attempt's span. */
  private decide(subTaskId: string, decision: string, reason?: string, model?: string): void {
    const open = [...this.attempts.entries()].filter(([id]) => id.startsWith(`${subTaskId}\u0000`));
    for (const [id, span] of open) {
      span.setAttribute("taskledger.decision", decision);
      span.addEvent("taskledger.decision", {
        "taskledger.decision": decision,
        ...(reason ? { "taskledger.decision.reason": reason } : {}),
        ...(model ? { "taskledger.decision.agent_model": model } : {}),
      });
      span.end();
      this.attempts.delete(id);
    }
  }

  private endReplan(subTaskId: string, reason: string): void {
    const span = this.replans.get(subTaskId);
    if (!span) return;
    span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: reason });
    span.end();
    this.replans.delete(subTaskId);
  }
}

function key(subTaskId: string, attempt: number): string {
  return `${subTaskId}\u0000${attempt}`;
}

function sum<T>(items: readonly T[], of: (item: T) => number): number {
  return items.reduce((total, item) => total + of(item), 0);
}

function prefixed(prefix: string, usage: RunEventOf<"plan-created">["usage"]) {
  return {
    [`${prefix}input_tokens`]: usage.inputTokens,
    [`${prefix}output_tokens`]: usage.outputTokens,
    [`${prefix}cache_read_tokens`]: usage.cacheReadTokens,
    [`${prefix}cache_write_tokens`]: usage.cacheWriteTokens,
    ...(usage.costUsd !== undefined ? { [`${prefix}cost_usd`]: usage.costUsd } : {}),
  };
}
