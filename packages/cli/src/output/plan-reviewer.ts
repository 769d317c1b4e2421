import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline/promises";
import {
  type PlanReview,
  type PlanReviewDecision,
  PlanValidationError,
  type ReviewPlan,
  type TaskLedger,
  validateTaskLedger,
} from "@taskledger/core";
import type { Colors } from "picocolors/types.js";
import type { CliIo } from "../cli-io.js";
import { terminalText } from "./terminal-text.js";

export interface ReviewerIo {
  io: CliIo;
  out: CliIo["stdout"];
  c: Colors;
  /** Stops live rendering while a person answers, and starts it again. */
  pause: () => void;
  resume: () => void;
}

/**
 * Asks a person at the terminal: approve (Enter or y), reject (n), or edit (e) the plan as JSON
 * in `$VISUAL`/`$EDITOR`. An edit that does not validate is shown with its errors and asked again.
 */
export function createPlanReviewer(r: ReviewerIo): ReviewPlan {
  return async (review) => {
    r.pause();
    try {
      if (review.kind === "replan") r.out.write(`${describeReplan(review, r.c)}\n`);
      for (;;) {
        const question = review.kind === "plan" ? "Run this plan?" : "Apply this change?";
        let answer: string;
        try {
          answer = (await ask(`${question} [Y/n/e(dit)] `, r.io, review.abortSignal))
            .trim()
            .toLowerCase();
        } catch (error) {
          // Withdrawn without a cancel: another reviewer (the `--ui` page) answered first.
          if (review.abortSignal.aborted && !r.io.signal.aborted)
            r.out.write(`\n${r.c.dim("Answered on the page.")}\n`);
          throw error;
        }
        if (answer === "" || answer.startsWith("y")) return { action: "approve" };
        if (answer.startsWith("n")) return { action: "reject", reason: "declined at the prompt" };
        if (!answer.startsWith("e")) continue;
        const edited = await editLedger(review.ledger, r);
        if (edited) return edited;
      }
    } finally {
      r.resume();
    }
  };
}

function describeReplan(review: PlanReview, c: Colors): string {
  const replaced = new Set(review.replaced ?? []);
  const added = review.ledger.subTasks.filter((s) => !replaced.has(s.id));
  return [
    c.yellow(`Replan proposed: replace ${terminalText([...replaced].join(", "))}`),
    c.dim(`  because ${terminalText(review.reason ?? "it failed")}`),
    ...added.map(
      (s) =>
        `  ${terminalText(s.id)}: ${terminalText(s.title)}${s.dependsOn.length ? c.dim(` (after ${terminalText(s.dependsOn.join(", "))})`) : ""}`,
    ),
  ].join("\n");
}

/** `withdrawn`: the question no longer stands (the page answered it first). */
async function ask(question: string, io: CliIo, withdrawn: AbortSignal): Promise<string> {
  const rl = createInterface({ input: io.stdin, output: io.stdout });
  try {
    return await rl.question(question, { signal: AbortSignal.any([io.signal, withdrawn]) });
  } finally {
    rl.close();
  }
}

/** Opens the plan as JSON in the person's editor; returns the edit, or undefined to ask again. */
async function editLedger(
  ledger: TaskLedger,
  r: ReviewerIo,
): Promise<PlanReviewDecision | undefined> {
  const dir = await mkdtemp(join(tmpdir(), "taskledger-plan-"));
  const file = join(dir, "plan.json");
  try {
    await writeFile(file, `${JSON.stringify(ledger, null, 2)}\n`);
    const editor = r.io.env.VISUAL ?? r.io.env.EDITOR ?? "vi";
    // The editor command is the person's own setting and may carry arguments ("code --wait").
    const code = await new Promise<number | null>((done) => {
      const child = spawn(`${editor} "${file}"`, {
        shell: true,
        stdio: "inherit",
        env: { ...r.io.env },
      });
      child.on("exit", done);
      child.on("error", () => done(127));
    });
    if (code !== 0) {
      r.out.write(r.c.red(`The editor (${editor}) exited with ${code}; the plan is unchanged.\n`));
      return undefined;
    }
    const text = await readFile(file, "utf8");
    try {
      const edited = validateTaskLedger(JSON.parse(text));
      r.out.write(
        `Running the edited plan: ${terminalText(edited.subTasks.map((s) => s.id).join(", "))}\n`,
      );
      return { action: "edit", ledger: edited };
    } catch (error) {
      const message =
        PlanValidationError.isInstance(error) || error instanceof SyntaxError
          ? error.message
          : String(error);
      r.out.write(
        `${r.c.red("The edited plan is not usable:")}\n${terminalText(message, { multiline: true })}\n`,
      );
      return undefined;
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
