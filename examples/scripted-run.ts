// A whole taskledger run with no API key and no agent: a scripted model plans a request and a
// fake executor plays the agents, one attempt cut off on purpose so the retry can be seen.
// Run it with `npm run example`. Swap in `@taskledger/llm` and `@taskledger/executor` for real work.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createManager, type RunEvent } from "@taskledger/core";
import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";

const request =
  "Add a slugify helper to the utils package, then write its unit tests and document it in the README.";

const model = createScriptedModel({
  responses: [
    {
      object: {
        subTasks: [
          {
            id: "helper",
            title: "Write slugify",
            description:
              "Create src/slugify.ts exporting slugify(text): lower-case, dashes for spaces.",
            successCriteria: ["src/slugify.ts exports slugify"],
            dependsOn: [],
            checks: [],
          },
          {
            id: "tests",
            title: "Test slugify",
            description: "Write src/slugify.test.ts covering spaces, case and punctuation.",
            successCriteria: ["the tests pass"],
            dependsOn: ["helper"],
            checks: [],
          },
          {
            id: "docs",
            title: "Document slugify",
            description: "Add a 'slugify' section to README.md with one example.",
            successCriteria: ["README.md has a slugify section"],
            dependsOn: ["helper"],
            checks: [],
          },
        ],
      },
    },
  ],
});

const executor = createFakeExecutor({
  script: {
    helper: [
      {
        type: "success",
        delayMs: 300,
        text: "Wrote src/slugify.ts: slugify(text) lower-cases and joins words with '-'.",
      },
    ],
    tests: [
      { type: "truncated", delayMs: 200 },
      { type: "success", delayMs: 300, text: "Wrote src/slugify.test.ts with 3 cases; all pass." },
    ],
    docs: [{ type: "success", delayMs: 400, text: "Added a slugify section to README.md." }],
  },
});

const started = Date.now();
const line = (text: string) =>
  console.log(`${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s  ${text}`);

function show(event: RunEvent): void {
  switch (event.type) {
    case "plan-created":
      line(`Plan (${event.ledger.subTasks.length} sub-tasks):`);
      for (const [i, s] of event.ledger.subTasks.entries()) {
        const after = s.dependsOn.length ? `  (after ${s.dependsOn.join(", ")})` : "";
        console.log(`         ${i + 1}. ${s.id}: ${s.title}${after}`);
      }
      break;
    case "sub-task-started":
      line(`▶ ${event.subTaskId} — attempt ${event.attempt}`);
      break;
    case "sub-task-retrying":
      line(`↻ ${event.subTaskId} — retrying: ${event.feedback.split(".")[0]}`);
      break;
    case "sub-task-completed":
      line(`✔ ${event.subTaskId} — ${event.entry.summary}`);
      break;
    case "sub-task-failed":
      line(`✘ ${event.subTaskId} — ${event.reason}`);
      break;
    case "sub-task-skipped":
      line(`- ${event.subTaskId} skipped — ${event.reason}`);
      break;
  }
}

// A directory of its own: a library never works in its host's directory unless told to.
const cwd = await mkdtemp(join(tmpdir(), "taskledger-example-"));
const manager = createManager({ model, executor, cwd, concurrency: 2 });
const run = manager.start(request);
run.on("*", show);
const report = await run.result;

console.log(`\nRun ${report.status} in ${report.durationMs} ms`);
for (const s of report.subTasks) {
  console.log(`  ${s.status.padEnd(9)} ${s.id.padEnd(7)} attempts ${s.attempts}`);
}
const { manager: m, agents: a } = report.usage;
console.log(
  `  tokens: manager ${m.inputTokens + m.outputTokens}, agents ${a.inputTokens + a.outputTokens}`,
);
process.exitCode = report.status === "completed" ? 0 : 1;
