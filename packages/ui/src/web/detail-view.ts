// The side panel: one sub-task, its attempts and, with worktrees, each attempt's diff.
import type { AttemptView, CandidateRoundView, SubTaskDetailView } from "../view.js";
import { api, badge, cost, duration, h, runPath, tokens } from "./dom.js";

export function detailView(d: SubTaskDetailView, runId: string): Node[] {
  return [
    h("h2", {}, d.title),
    h(
      "p",
      {},
      badge(d.status),
      ` ${d.id}`,
      d.dependsOn.length ? ` · after ${d.dependsOn.join(", ")}` : "",
    ),
    d.reason ? h("p", { class: "reason" }, d.reason) : null,
    d.activity ? h("p", { class: "activity", id: "activity" }, `Now: ${d.activity}`) : null,
    d.replacedBy ? h("p", { class: "muted" }, `Replaced by ${d.replacedBy.join(", ")}`) : null,
    h("h3", {}, "Description"),
    h("pre", { class: "text" }, d.description),
    h("h3", {}, "Success criteria"),
    h("ul", {}, ...d.successCriteria.map((c) => h("li", {}, c))),
    d.checks.length ? h("h3", {}, "Checks") : null,
    d.checks.length ? h("ul", {}, ...d.checks.map((c) => h("li", { class: "code" }, c))) : null,
    h("h3", {}, "Tokens"),
    h("p", {}, tokens(d.tokens) || "none yet", " · cost ", cost(d.tokens)),
    ...d.candidates.map(candidatesView),
    h("h3", {}, `Attempts (${d.attempts.length})`),
    ...d.attempts.map((a) => attemptView(a, runId)),
    h("h3", {}, "Output passed forward"),
    d.outputData
      ? h("pre", { class: "text", id: "output-data" }, d.outputData)
      : h("p", { class: "muted" }, "Nothing yet: dependents get it once this completes."),
  ].filter((node): node is HTMLElement => node !== null);
}

/** One round of parallel candidates: the winner, and each other one kept with why it lost. */
function candidatesView(r: CandidateRoundView): HTMLElement {
  return h(
    "section",
    { class: "candidates" },
    h("h3", {}, `Candidates, round ${r.round} (${r.reason})`),
    h(
      "p",
      {},
      r.winner === null
        ? r.by === "none"
          ? "None was complete."
          : `None was chosen (${r.by}): nothing of this round was merged.`
        : `Attempt ${r.winner} chosen (${r.by}).`,
      r.why ? ` ${r.why}` : "",
    ),
    h(
      "ul",
      {},
      ...r.candidates.map((c) =>
        h(
          "li",
          { class: c.attempt === r.winner ? "winner" : "loser" },
          `Attempt ${c.attempt}${c.agentModel ? ` (${c.agentModel})` : ""}: `,
          c.attempt === r.winner ? "merged" : (c.lost ?? "not chosen"),
          ` · ${tokens(c.tokens) || "no tokens"} · cost `,
          cost(c.tokens),
          c.ref ? h("span", { class: "code" }, ` ${c.ref}`) : "",
        ),
      ),
    ),
  );
}

function attemptView(a: AttemptView, runId: string): HTMLElement {
  const verdict = a.verdict;
  return h(
    "details",
    { class: "attempt", open: "" },
    h(
      "summary",
      {},
      `Attempt ${a.attempt}: ${a.outcome ?? "running"}`,
      verdict ? ` · ${verdictWords(verdict.completed, verdict.incomplete)}` : "",
      a.durationMs !== undefined ? ` · ${duration(a.durationMs)}` : "",
      a.tokens ? ` · ${tokens(a.tokens)}` : "",
    ),
    a.agentModel ? h("p", { class: "muted" }, `agent model ${a.agentModel}`) : null,
    // A provider's refusal is said as such below, not as the attempt's error.
    a.error && !a.limit ? h("pre", { class: "text error" }, a.error) : null,
    a.limit ? limitView(a.limit) : null,
    a.finalText ? h("h4", {}, "Agent's last message") : null,
    a.finalText ? h("pre", { class: "text" }, a.finalText) : null,
    verdict ? h("h4", {}, "Verdict") : null,
    verdict ? h("pre", { class: "text" }, verdict.summary) : null,
    verdict?.feedback ? h("h4", {}, "Feedback") : null,
    verdict?.feedback ? h("pre", { class: "text" }, verdict.feedback) : null,
    verdict?.evidence.length ? h("h4", {}, "Evidence") : null,
    verdict?.evidence.length
      ? h(
          "ul",
          { class: "evidence" },
          ...verdict.evidence.map((e) =>
            h(
              "li",
              { class: e.passed ? "pass" : "fail" },
              `${e.passed ? "✓" : "✗"} ${e.source}`,
              e.detail ? h("pre", { class: "text" }, e.detail) : null,
            ),
          ),
        )
      : null,
    a.integration ? gateFailureView(a.integration) : null,
    a.retryFeedback ? h("h4", {}, "Retried with") : null,
    a.retryFeedback ? h("pre", { class: "text" }, a.retryFeedback) : null,
    a.toolCalls.length
      ? h("h4", {}, `Tool calls (${a.toolCalls.length + a.toolCallsOmitted})`)
      : null,
    a.toolCalls.length
      ? h(
          "ol",
          { class: "tools" },
          ...a.toolCalls.map((t) =>
            h(
              "li",
              {},
              h("span", { class: "code" }, `${t.tool} ${t.status}`),
              t.input ? h("pre", { class: "text" }, t.input) : null,
              t.output ? h("pre", { class: "text muted" }, t.output) : null,
            ),
          ),
        )
      : null,
    a.toolCallsOmitted
      ? h("p", { class: "muted" }, `${a.toolCallsOmitted} earlier calls not shown`)
      : null,
    a.filesChanged.length ? h("h4", {}, "Files changed") : null,
    a.filesChanged.length
      ? h("ul", {}, ...a.filesChanged.map((f) => h("li", { class: "code" }, f)))
      : null,
    a.outsideCwd
      ? h(
          "h4",
          {},
          a.outsideCwd.shared
            ? `Outside the run's directory: ${a.outsideCwd.count} path(s) changed while it ran (shared directory, not reverted)`
            : `Left out: ${a.outsideCwd.count} path(s) outside the run's directory, never applied`,
        )
      : null,
    a.outsideCwd
      ? h("ul", {}, ...a.outsideCwd.paths.map((f) => h("li", { class: "code" }, f)))
      : null,
    a.refusals?.length ? h("h4", {}, `Refused by the sandbox: ${a.refusals.length}`) : null,
    a.refusals?.length
      ? h("ul", {}, ...a.refusals.map((r) => h("li", { class: "code" }, `${r.kind} ${r.target}`)))
      : null,
    diffSlot(a, runId),
  );
}

/** A merge the integration gate sent back: whose work it met, each failing command's output. */
export function gateFailureView(gate: NonNullable<AttemptView["integration"]>): HTMLElement {
  return h(
    "section",
    { class: "gate-failure" },
    h(
      "h4",
      {},
      `Broke the integration checks once merged${gate.with.length ? ` with ${gate.with.join(", ")}` : ""}`,
    ),
    h(
      "ul",
      { class: "evidence" },
      ...gate.checks.map((check) =>
        h(
          "li",
          { class: "fail" },
          h("span", { class: "code" }, `✗ ${check.command}`),
          check.detail ? h("pre", { class: "text" }, check.detail) : null,
        ),
      ),
    ),
  );
}

/** An attempt its provider's limit ended: who refused, what it said, and the wait or why none helps. */
export function limitView(limit: NonNullable<AttemptView["limit"]>): HTMLElement {
  const status = limit.statusCode === undefined ? "" : ` (${limit.statusCode})`;
  const next =
    limit.until !== undefined
      ? `Not counted as an attempt: the sub-task ran again once ${limit.provider} let work in${
          limit.retryAfterMs === undefined
            ? ""
            : ` (it asked to wait ${duration(limit.retryAfterMs)})`
        }.`
      : (limit.reason ?? `${limit.provider} refused for good.`);
  return h(
    "section",
    { class: "rate-limited" },
    h(
      "h4",
      {},
      limit.kind === "quota"
        ? `${limit.provider}'s quota is exhausted${status}`
        : `Rate-limited by ${limit.provider}${status}${limit.kind === "overloaded" ? ": overloaded" : ""}`,
    ),
    h("pre", { class: "text" }, limit.message),
    h("p", { class: "muted" }, next),
  );
}

// Why an attempt is incomplete, said once in words (the log's reason codes are for programs).
const incompleteWords: Record<string, string> = {
  "judged-incomplete": "judged incomplete",
  "checks-failed": "checks failed",
  "not-finished": "did not finish",
  stuck: "no progress over the attempt before",
  "judge-unavailable": "not judged: the judge was unavailable",
  "evaluator-failed": "the evaluator failed",
  interrupted: "interrupted, not judged",
  "merge-conflict": "its work did not merge",
  integration: "merged, it broke the integration checks",
};

export function verdictWords(completed: boolean, incomplete: string | undefined): string {
  if (completed) return "judged complete";
  return (incomplete && incompleteWords[incomplete]) || "incomplete";
}

/** With worktrees an attempt is a commit: its diff is fetched when asked for, shown as text. */
function diffSlot(a: AttemptView, runId: string): HTMLElement {
  const slot = h("div", { "data-slot": "diff" });
  if (a.diff) slot.append(h("h4", {}, "Diff"), h("pre", { class: "text diff" }, a.diff));
  else if (a.commit) {
    const commit = a.commit;
    const button = h(
      "button",
      { type: "button", class: "show-diff" },
      `Show diff (${commit.slice(0, 10)})`,
    );
    button.addEventListener("click", async () => {
      button.setAttribute("disabled", "");
      try {
        const { diff } = await api<{ diff: string }>(`${runPath(runId)}/commits/${commit}/diff`);
        slot.replaceChildren(
          h("h4", {}, `Diff (${commit.slice(0, 10)})`),
          h("pre", { class: "text diff" }, diff),
        );
      } catch (error) {
        slot.replaceChildren(h("p", { class: "error" }, String((error as Error).message)));
      }
    });
    slot.append(button);
  }
  return slot;
}
