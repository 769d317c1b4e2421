import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TaskLedgerInput } from "@taskledger/core";
import type { RecordedRequest } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { processesUnder, scriptedOpencode, testScratch } from "../test-support/cli-harness.js";
import { createManager } from "./create-manager.js";

// Everything a shell would act on: substitution, backticks, quotes, newlines, separators, globs.
const description = [
  "Report that $(touch pwned) and `touch pwned` were only text.",
  "Quotes: 'single $(touch pwned)' and \"double `touch pwned`\"; touch pwned; | touch pwned && touch pwned",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, meant literally
  "Newline-separated: $HOME ${PATH} * ?; $'\\n' \\$(touch pwned) > pwned < /dev/null &",
].join("\n");
const title = "Echo `touch pwned` and $(touch pwned) 'as' \"text\"";

const plan: TaskLedgerInput = {
  subTasks: [
    {
      id: "quote",
      title,
      description,
      successCriteria: ["the agent reports the text; no file named pwned exists"],
      dependsOn: [],
    },
  ],
};

/** The text of the user messages of a chat request, whichever content form opencode used. */
function userText(request: RecordedRequest): string {
  const messages =
    (request.body as { messages?: { role: string; content?: unknown }[] }).messages ?? [];
  return messages
    .filter((m) => m.role === "user")
    .map((m) =>
      typeof m.content === "string"
        ? m.content
        : Array.isArray(m.content)
          ? m.content.map((part: { text?: string }) => part.text ?? "").join("")
          : "",
    )
    .join("\n");
}

async function pwnedIn(directories: string[], recursive = true): Promise<string[]> {
  const found: string[] = [];
  for (const directory of directories) {
    const names = await readdir(directory, { recursive }).catch(() => [] as string[]);
    for (const name of names) if (name.includes("pwned")) found.push(join(directory, name));
  }
  return found;
}

const scratch = testScratch("all");

describe("sub-task text never reaches a shell", () => {
  it("a description full of shell syntax reaches the model byte for byte on the real opencode CLI, and runs nothing", async () => {
    const server = await scratch.server({ replies: () => ({ text: "It was only text." }) });
    const root = await scratch.directory("shell-safety-");
    const { cwd, workRoot, executor } = await scriptedOpencode(server, root, {
      keepAttemptDirs: true,
      // The title goes to opencode as an argument: the same text must pass through argv intact.
      title: (subTask) => subTask.title,
    });
    const before = await pwnedIn([process.cwd(), tmpdir()], false);

    const report = await createManager({ cwd: process.cwd(), executor, maxRetries: 0 }).run(
      `Quote this: $(touch pwned) \`touch pwned\`\n'; touch pwned`,
      { plan, cwd },
    );

    expect(report.status).toBe("completed");
    const delivered = server.requests.map(userText).filter((text) => text.includes("# Sub-task"));
    expect(delivered.length).toBeGreaterThan(0);
    // Byte for byte: the whole description, its newlines and quotes, inside the user message.
    for (const text of delivered) {
      expect(text).toContain(`## Your sub-task\n${description}\n`);
      expect(text).toContain(`# Sub-task quote: ${title}\n`);
    }
    expect(await pwnedIn([cwd, workRoot, root])).toEqual([]);
    expect(await pwnedIn([process.cwd(), tmpdir()], false)).toEqual(before);
    expect(await processesUnder(root)).toEqual([]);
  }, 120_000);
});
