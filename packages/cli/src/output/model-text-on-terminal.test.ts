import type { TaskLedgerInput } from "@taskledger/core";
import { type RecordedRequest, type ScriptedReply, subTaskOf } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import { demoRequest } from "../demo/demo-scenario.js";
import {
  captureIo,
  codexArgs,
  terminal,
  testScratch,
  useCodexKey,
} from "../test-support/cli-harness.js";
import type { JsonReport } from "./json-report.js";

const scratch = testScratch();
// The terminal's cleaning of model and agent text is the subject, not the agent: its runs are on
// Codex.
useCodexKey();

// What a hostile or confused model could write: set the window title, clear the screen, move the
// cursor up over earlier lines, return to the line's start to overwrite it, ring the bell.
const title = "\u001b]0;pwned-title\u0007";
const clear = "\u001b[2J\u001b[H";
const up = "\u001b[1A\r\u001b[2K";
const c1 = "\u009b2J\u0090dcs-pwned\u009c";

const plan: TaskLedgerInput = {
  subTasks: [
    {
      id: "write",
      title: `Write${title} the${clear} file${up}`,
      description: `Write notes.txt.${title}${clear}`,
      successCriteria: [`notes.txt exists${up}`],
    },
  ],
};

const replan: TaskLedgerInput = {
  subTasks: [
    {
      id: "write-again",
      title: `Write it${c1} again${up}\u0007`,
      description: `Write notes.txt, smaller.${clear}`,
      successCriteria: ["notes.txt exists"],
    },
  ],
};

interface ChatBody {
  response_format?: { json_schema?: { name?: string } };
}

/**
 * The planner's plan and replan, an agent that writes text full of escape codes, and a judge whose
 * feedback and summary hold them: the first sub-task never finishes, so it is replanned.
 */
function hostileReplies(): (request: RecordedRequest) => ScriptedReply {
  let plans = 0;
  return (request) => {
    const body = request.body as ChatBody;
    const name = body.response_format?.json_schema?.name;
    // The manager's chat bodies and Codex's Responses bodies alike.
    const id = subTaskOf(request);
    if (name === "task_ledger") return { text: JSON.stringify(plans++ === 0 ? plan : replan) };
    if (name === "progress_ledger_entry") {
      const done = id === "write-again";
      return {
        text: JSON.stringify({
          completed: done,
          summary: done ? `Wrote it${title}${clear}` : "",
          outputData: "",
          feedback: done ? "" : `Missing${clear} the file${up}${title}\u0007`,
        }),
      };
    }
    if (id === undefined) return { text: "Nothing to do." };
    return { text: `${title}Working${up} on it${clear}\u0007` };
  };
}

async function setup() {
  const server = await scratch.server({ replies: hostileReplies() });
  const cwd = await scratch.directory("taskledger-escapes-");
  const args = [...codexArgs(server.openaiBaseURL), "--cwd", cwd, "--max-retries", "1"];
  return { server, args };
}

/** What may not reach a terminal from a model's text, whatever the view. */
function expectNoInjectedControls(screen: string) {
  expect(screen).not.toContain("\u0007");
  expect(screen).not.toContain("\u001b]");
  expect(screen).not.toContain("\u001b[2J");
  expect(screen).not.toContain("\u001b[H");
  expect(screen).not.toMatch(/[\u0080-\u009f]/);
  // A sequence is removed whole, not only its ESC.
  expect(screen).not.toContain("pwned");
  expect(screen).not.toContain("[2J");
}

describe("text from models and agents reaches the terminal without control characters", () => {
  it("plain lines, the summary and the --json run: no ESC, BEL or CR at all; the JSON keeps the text exact", async () => {
    const { server, args } = await setup();
    const t = captureIo();
    const code = await runCli(["run", demoRequest, "--yes", "--json", ...args], t.io);
    expect(code, t.err()).toBe(0);
    const err = t.err();
    // The text did reach the screen, cleaned.
    expect(err).toContain("Write the file");
    expect(err).toContain("Missing the file");
    expect(err).toContain("Write it again");
    expect(err).toContain("Wrote it");
    expectNoInjectedControls(err);
    expect(err).not.toContain("\u001b");
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what the screen may not hold
    expect(err).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    const report = JSON.parse(t.out()) as JsonReport;
    expect(report.subTasks.find((s) => s.id === "write-again")?.summary).toBe(
      `Wrote it${title}${clear}`,
    );
    expect(server.unexpected).toBe(0);
  }, 120_000);

  it("the live view and the review prompts of a plan and a replan", async () => {
    const { args } = await setup();
    const t = terminal({});
    let screen = "";
    t.io.stdout.on("data", (d) => {
      screen += d;
    });
    const exit = runCli(["run", demoRequest, ...args], t.io);
    await t.answer("Run this plan? [Y/n/e(dit)]", "y");
    await t.answer("Apply this change? [Y/n/e(dit)]", "y");
    expect(await exit, screen).toBe(0);
    expect(screen).toContain("because");
    expect(screen).toContain("write-again: Write it again");
    expect(screen).toMatch(/Working +on it/);
    // The live view draws with its own cursor codes; none of the model's may pass.
    expectNoInjectedControls(screen);
    // The one carriage return is the prompt's echo of the answer.
    expect(screen.replaceAll("y\r\n", "")).not.toContain("\r");
  }, 120_000);
});
