import { oneLine, type RunEvent, type SlotPreparation } from "@taskledger/core";
import type { Colors } from "picocolors/types.js";
import type { ProgressState } from "./progress-state.js";
import { providerLimitLines } from "./provider-limit-lines.js";
import { formatDuration, terminalText } from "./terminal-text.js";

/**
 * The lines that stay in the scrollback for an event (after `applyEvent` has folded it in). Every
 * string a model or an agent wrote goes through `terminalText` before it is coloured.
 */
export function eventLines(event: RunEvent, state: ProgressState, c: Colors): string[] {
  const total = state.subTasks.length;
  const step = (id: string) => {
    const view = state.byId.get(id);
    return view ? `Step ${view.index}/${total} ${c.bold(view.title)}` : terminalText(id);
  };
  switch (event.type) {
    case "plan-created": {
      const { subTasks } = event.ledger;
      const head = event.decomposed
        ? `Plan: ${subTasks.length} sub-task${subTasks.length === 1 ? "" : "s"}${event.repaired ? " (repaired once)" : ""}`
        : "Plan: one step, run as it is";
      const facts = event.ledger.facts ?? [];
      return [
        c.bold(head),
        ...(facts.length > 0 ? [c.dim("  Facts:")] : []),
        ...facts.map((f) => `  ${c.dim(`· ${f.kind}:`)} ${terminalText(oneLine(f.text, 300))}`),
        ...subTasks.map((s, i) => {
          const paths = s.paths?.length
            ? c.dim(` changes ${terminalText(oneLine(s.paths.join(", "), 120))}`)
            : "";
          return `  ${i + 1}. ${terminalText(s.title)} ${c.dim(`[${terminalText(s.id)}]`)}${after(s.dependsOn, c)}${paths}`;
        }),
      ];
    }
    case "project-baseline": {
      const failing = event.results.filter((r) => !r.passed);
      const passing = event.results.filter((r) => r.passed);
      const shown = (rs: typeof event.results) =>
        terminalText(oneLine(rs.map((r) => r.argv.join(" ")).join(", "), 160));
      return [
        ...(passing.length > 0
          ? [
              c.dim(
                `Before any change, ${shown(passing)} pass${passing.length === 1 ? "es" : ""}: they check every sub-task that changes code.`,
              ),
            ]
          : []),
        ...failing.map((r) =>
          c.yellow(
            `Before any change, ${terminalText(r.argv.join(" "))} already fails (${terminalText(oneLine(r.detail, 160))}): it checks no sub-task.`,
          ),
        ),
      ];
    }
    case "explore-started":
      return [c.dim("Looking around the project first (read-only)…")];
    case "explore-finished": {
      const lines = event.findings.split("\n").filter((line) => line.trim() !== "").length;
      const refused = event.refused.length > 0 ? `; ${event.refused.length} change(s) refused` : "";
      const wrote =
        event.wrote.length > 0
          ? `; it changed ${terminalText(oneLine(event.wrote.join(", "), 120))} all the same (discarded)`
          : "";
      return [
        c.dim(
          `Looked around in ${formatDuration(event.durationMs)} (${event.outcome}): ${lines} line(s) of findings${refused}${wrote}.`,
        ),
      ];
    }
    case "project-digested": {
      const { digest } = event;
      const commands = digest.commands.map((command) => command.argv.join(" "));
      return [
        c.dim(
          `Read the project: ${digest.files} file${digest.files === 1 ? "" : "s"}${commands.length > 0 ? `; its commands: ${terminalText(oneLine(commands.join(", "), 200))}` : ""}${event.cached ? " (cached)" : ""}.`,
        ),
      ];
    }
    case "sub-task-started":
      return [
        `${c.cyan("▶")} ${step(event.subTaskId)}${event.attempt > 1 || event.candidate ? c.dim(` · attempt ${event.attempt}`) : ""}${event.candidate ? c.dim(" · candidate") : ""}${event.agentModel ? c.dim(` · ${terminalText(event.agentModel)}`) : ""}`,
      ];
    case "sub-task-retrying":
      return [
        `${c.yellow("↻")} ${step(event.subTaskId)} retrying ${c.dim(`(attempt ${event.attempt})`)}: ${state.byId.get(event.subTaskId)?.note ?? ""}`,
      ];
    case "sub-task-completed": {
      const view = state.byId.get(event.subTaskId);
      const took =
        view?.lastDurationMs === undefined
          ? ""
          : c.dim(` in ${formatDuration(view.lastDurationMs)}`);
      return [`${c.green("✔")} ${step(event.subTaskId)}${took}: ${view?.note ?? ""}`];
    }
    case "sub-task-failed":
      // The line that stays says why in full (bounded): the live note's 100 characters can cut
      // off the one fact a user needs, such as the key opencode rejected in its config.
      return [
        `${c.red("✘")} ${step(event.subTaskId)} failed after ${event.attempts} attempt(s): ${oneLine(event.reason, 600)}`,
      ];
    case "sub-task-skipped":
      return [
        `${c.dim("–")} ${step(event.subTaskId)} skipped: ${state.byId.get(event.subTaskId)?.note ?? ""}`,
      ];
    case "budget-exhausted":
      return [
        c.yellow(
          event.kind === "tokens"
            ? `Token budget reached (${event.used} of ${event.limit}): nothing new starts.`
            : event.kind === "cost"
              ? `Cost budget of $${event.limit} reached ($${event.used.toFixed(4)} spent): nothing new starts.`
              : `Time budget of ${formatDuration(event.limit)} reached: stopping.`,
        ),
      ];
    case "budget-unenforceable":
      return [
        `${c.yellow("warning:")} --max-cost $${event.limit} cannot be enforced for ${terminalText(event.unpricedModels.join(", "))}: no price is known, so their spend is not counted`,
      ];
    case "run-resumed":
      return [
        c.bold(
          event.interrupted.length === 0
            ? "Resumed."
            : `Resumed: ${event.interrupted.map((i) => `${i.subTaskId} (attempt ${i.attempt} was interrupted)`).join(", ")} will run again${event.reclaimed ? `; stopped ${event.reclaimed} process(es) left from before` : ""}.`,
        ),
      ];
    case "sub-task-escalated":
      return [
        `${c.yellow("⇡")} ${step(event.subTaskId)} ${
          event.step === "replan"
            ? "is replanned"
            : event.step === "candidates"
              ? "gets parallel candidates"
              : `tries ${terminalText(event.agentModel ?? "another model")}`
        }: ${oneLine(terminalText(event.reason), 120)}`,
      ];
    case "candidates-started": {
      const models = [...new Set(event.candidates.map((x) => x.agentModel).filter(Boolean))];
      return [
        `${c.cyan("⑃")} ${step(event.subTaskId)}: ${event.candidates.length} candidates at once (${event.reason}${
          models.length > 0 ? `; ${terminalText(models.join(", "))}` : ""
        }): attempts ${event.candidates.map((x) => x.attempt).join(", ")}`,
      ];
    }
    case "candidates-chosen": {
      const lines = [
        event.winner === undefined
          ? `${c.yellow("⑃")} ${step(event.subTaskId)}: ${event.by === "none" ? "no candidate complete" : `none chosen (${event.by}), none merged`}; ${oneLine(terminalText(event.reason), 120)}`
          : `${c.green("⑃")} ${step(event.subTaskId)}: attempt ${event.winner} chosen (${event.by}): ${oneLine(terminalText(event.reason), 120)}`,
      ];
      for (const loser of event.candidates.filter((x) => x.attempt !== event.winner))
        lines.push(
          `    attempt ${loser.attempt} kept${loser.ref ? ` at ${loser.ref}` : ""}: ${oneLine(terminalText(loser.lost ?? ""), 100)}`,
        );
      return lines;
    }
    case "plan-revised": {
      const added = event.ledger.subTasks.filter((s) => event.added.includes(s.id));
      return [
        c.bold(
          event.acceptance !== undefined || event.replaced.length === 0
            ? "Plan extended for what is missing:"
            : `Plan revised: ${terminalText(event.replaced.join(", "))} replaced by`,
        ),
        ...added.map(
          (s) =>
            `  ${terminalText(s.title)} ${c.dim(`[${terminalText(s.id)}]`)}${after(s.dependsOn, c)}`,
        ),
      ];
    }
    case "plan-reviewed":
      if (event.action === "approve") return [];
      return [
        event.action === "edit"
          ? "The plan was edited in review."
          : c.yellow(`The ${event.kind} was rejected: ${terminalText(event.reason ?? "")}`),
      ];
    case "run-started": {
      const workspace = event.workspace;
      const config = event.settings?.host?.config;
      const used =
        typeof config === "string" ? [c.dim(`Project config: ${terminalText(config)}`)] : [];
      if (workspace?.kind === "worktree") {
        return [
          ...used,
          c.dim(
            `Each attempt works in its own git worktree; your tree is left alone until the end (branch ${terminalText(workspace.branch)}).`,
          ),
        ];
      }
      return [...used, ...(workspace?.notice ? [c.yellow(terminalText(workspace.notice))] : [])];
    }
    case "slot-prepared":
      return [c.dim(slotLine(event.preparation))];
    case "sub-task-conflicted":
      return [
        `${c.yellow("⚠")} ${step(event.subTaskId)} did not merge${
          event.files.length > 0
            ? `: ${terminalText(oneLine(event.files.join(", "), 120))} also changed by ${terminalText(event.with.join(", ") || "earlier work")}`
            : ""
        }; it goes on from the run's branch.`,
      ];
    case "integration-checked": {
      const failing = event.results.filter((r) => !r.passed);
      const took = c.dim(` (${formatDuration(event.durationMs)})`);
      const what = event.final
        ? "the final result"
        : `${terminalText(oneLine(event.parts.join(", "), 120))} merged on the run's branch`;
      if (event.passed)
        return [`${c.green("✔")} Checked ${what}: ${commandsText(event.results)} passed${took}`];
      const next = event.final
        ? event.commit
          ? "; not applied"
          : ""
        : event.parts.length > 1
          ? "; looking for the part that breaks it"
          : "";
      return [`${c.yellow("⚠")} Checked ${what}: ${commandsText(failing)} failed${took}${next}`];
    }
    case "sub-task-integration-failed": {
      const failing = state.run.integration.failures.at(-1)?.results ?? [];
      return [
        `${c.yellow("⚠")} ${step(event.subTaskId)} attempt ${event.attempt} broke ${
          failing.length > 0 ? commandsText(failing) : "the checks"
        } once merged${
          event.with.length > 0 ? ` with ${terminalText(oneLine(event.with.join(", "), 120))}` : ""
        }; it goes on from the run's branch.`,
        ...failing.slice(0, 2).map((r) => c.dim(`    ${terminalText(oneLine(r.detail, 200))}`)),
      ];
    }
    case "acceptance-judged":
      if (event.verdict === "satisfied")
        return [`${c.green("✔")} Acceptance: the request is met as a whole.`];
      if (event.verdict === "unavailable")
        return [
          c.yellow(
            `Acceptance: no verdict (${terminalText(oneLine(event.reason ?? "the judge did not answer", 200))}); the checked work stands.`,
          ),
        ];
      return [
        `${c.yellow("⚠")} Acceptance (round ${event.round}): the request is not met as a whole; missing:`,
        ...event.missing.map(
          (m) =>
            `  · ${terminalText(oneLine(m.what, 160))}${m.why ? c.dim(` — ${terminalText(oneLine(m.why, 160))}`) : ""}`,
        ),
      ];
    case "provider-limited":
      return providerLimitLines(event, state.limits, c, step);
    case "workspace-finished":
      return [(event.applied ? c.green : c.yellow)(terminalText(event.note))];
    case "attempt-finished": {
      const outside = event.result.outsideCwd;
      const refusals = event.result.refusals ?? [];
      return [
        ...(outside
          ? [
              `${c.yellow("⚠")} ${step(event.subTaskId)} attempt ${event.attempt} changed ${outside.count} path(s) outside the run's directory, ${outside.shared ? "in the shared directory (not reverted)" : "left out"}: ${terminalText(oneLine(outside.paths.join(", "), 160))}`,
            ]
          : []),
        ...(refusals.length > 0
          ? [
              `${c.yellow("⚠")} ${step(event.subTaskId)} attempt ${event.attempt}: the sandbox refused ${terminalText(oneLine(refusals.map((r) => `${r.kind} ${r.target}`).join(", "), 200))}`,
            ]
          : []),
      ];
    }
    case "run-failed":
      return [c.red(`Run failed: ${terminalText(event.error.message)}`)];
    default:
      return [];
  }
}

/** One line saying what a worktree slot was given: dependencies, included files, setup. */
export function slotLine(p: SlotPreparation): string {
  if (p.reason === "reused") {
    return terminalText(
      `Worktree slot ${p.slot} reused from an earlier run in ${formatDuration(p.durationMs)}: its environment was kept.`,
    );
  }
  const parts: string[] = [];
  if (p.dependencies.length > 0) {
    const named = p.dependencies.slice(0, 4).join(", ");
    const more = p.dependencies.length > 4 ? ` and ${p.dependencies.length - 4} more` : "";
    parts.push(`copied ${named}${more} from ${p.from ?? "your tree"}`);
  } else parts.push("no ignored dependency directory to copy");
  if (p.includedCount > 0) {
    const named = p.included.slice(0, 3).join(", ");
    const more = p.includedCount > 3 ? ` and ${p.includedCount - 3} more` : "";
    parts.push(`included ${named}${more}`);
  }
  if (p.setup)
    parts.push(`setup \`${p.setup.command}\` ran in ${formatDuration(p.setup.durationMs)}`);
  const why = p.reason === "inputs-changed" ? " again (lockfiles changed)" : "";
  return terminalText(
    `Worktree slot ${p.slot} prepared${why} in ${formatDuration(p.durationMs)}: ${parts.join("; ")}.`,
  );
}

/** The checks' commands, one line: `npm test`, `tsc --noEmit`. */
export function commandsText(results: readonly { argv: readonly string[] }[]): string {
  if (results.length === 0) return "no check";
  return terminalText(oneLine(results.map((r) => `\`${r.argv.join(" ")}\``).join(", "), 200));
}

/** " (after a, b)" for a sub-task with dependencies. */
function after(dependsOn: readonly string[], c: Colors): string {
  return dependsOn.length > 0 ? c.dim(` (after ${terminalText(dependsOn.join(", "))})`) : "";
}
