import {
  createFakeExecutor,
  createScriptedModel,
  type FakeExecutorOptions,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import type { Check } from "../ledger/sub-task.js";
import type { RunEvent } from "../log/run-events.js";
import type { Evaluator } from "../ports/evaluator.js";
import type { ProjectDigest, ProjectSource } from "../ports/project-source.js";
import { createManager } from "../run/manager.js";
import { MemoryRunStore } from "../store/run-store.js";
import { passedEntry, task } from "../test-support/sub-task-fixture.js";

const request = "Add a slugify helper, test it, then document it in the README.";
const digest: ProjectDigest = {
  text: "## Files\n3 tracked by git.\n## Tree\nsrc/index.ts\npackage.json\nAGENTS.md",
  commands: [
    { kind: "test", argv: ["npm", "test"], source: 'package.json script "test"' },
    { kind: "typecheck", argv: ["npm", "run", "typecheck"], source: "package.json" },
    { kind: "lint", argv: ["npm", "run", "lint"], source: "package.json" },
  ],
  files: 3,
  key: "k1",
};

function countingSource(): ProjectSource & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async digest(cwd) {
      calls.push(cwd);
      return digest;
    },
  };
}

const facts = [
  { kind: "given", text: "The project tests with npm test (vitest)." },
  { kind: "guess", text: "slugify belongs in src/strings.ts." },
] as const;

/** An evaluator that passes every attempt and keeps the checks it was given, per sub-task. */
function checkRecorder(): Evaluator & { seen: Map<string, Check[]> } {
  const seen = new Map<string, Check[]>();
  return {
    seen,
    async evaluate(input) {
      seen.set(input.subTask.id, input.subTask.checks);
      return passedEntry();
    },
  };
}

describe("a plan grounded in the project", () => {
  it("gives the planner the project's digest before the request, logged once", async () => {
    const model = createScriptedModel({ responses: [{ object: { subTasks: [task("a")] } }] });
    const project = countingSource();
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: "/tmp",
      model,
      executor: createFakeExecutor({ fallback: { type: "success" } }),
      project,
    }).run(request, { onEvent: (e) => events.push(e) });
    expect(report.status).toBe("completed");
    const prompt = String(model.calls[0]?.messages.at(-1)?.content);
    expect(prompt).toContain("src/index.ts");
    expect(prompt.indexOf("AGENTS.md")).toBeLessThan(prompt.indexOf(request));
    expect(model.calls[0]?.system).toContain("paths lists the files");
    expect(project.calls).toEqual(["/tmp"]);
    expect(events.filter((e) => e.type === "project-digested")).toHaveLength(1);
    expect(report.project).toEqual({ files: 3, commands: digest.commands });
  });

  it("plans without a digest when the project cannot be read, and says nothing is wrong", async () => {
    const model = createScriptedModel({ responses: [{ object: { subTasks: [task("a")] } }] });
    const report = await createManager({
      cwd: "/tmp",
      model,
      executor: createFakeExecutor({ fallback: { type: "success" } }),
      project: {
        digest: async () => {
          throw new Error("unreadable");
        },
      },
    }).run(request);
    expect(report.status).toBe("completed");
    expect(String(model.calls[0]?.messages.at(-1)?.content)).toBe(`Request:\n${request}`);
    expect(report.project).toBeUndefined();
  });

  it("keeps the plan's facts through the log, a resume and the report, and shows them to each attempt", async () => {
    const store = new MemoryRunStore();
    const controller = new AbortController();
    const model = createScriptedModel({
      responses: [{ object: { facts, subTasks: [task("a"), task("b", ["a"])] } }],
    });
    const project = countingSource();
    const first = createManager({
      cwd: "/tmp",
      createRunId: () => "facts-run",
      model,
      executor: createFakeExecutor({
        script: { a: [{ type: "success", text: "a done" }], b: [{ type: "hang" }] },
      }),
      store,
      project,
    }).start(request, { abortSignal: controller.signal });
    first.on("sub-task-started", (e) => {
      if (e.subTaskId === "b") controller.abort();
    });
    expect((await first.result).status).toBe("cancelled");
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({ cwd: "/tmp", model, executor, store, project }).resume(
      "facts-run",
    ).result;
    expect(report.status).toBe("completed");
    expect(report.facts).toEqual(facts);
    // The resumed run kept the logged digest: the project was read once.
    expect(project.calls).toHaveLength(1);
    const prompt = executor.calls[0]?.prompt ?? "";
    expect(prompt).toContain("## Facts the plan rests on");
    expect(prompt).toContain("(guess) slugify belongs in src/strings.ts.");
  });

  it("never runs two sub-tasks whose declared paths overlap at once; disjoint ones do run together", async () => {
    const plan = {
      subTasks: [
        task("one", [], { paths: ["src/strings.ts"] }),
        task("two", [], { paths: ["src/*.ts"] }),
        task("three", [], { paths: ["docs/**"] }),
      ],
    };
    const executor = createFakeExecutor({ fallback: { type: "success", delayMs: 60 } });
    const report = await createManager({ cwd: "/tmp", executor, concurrency: 3 }).run(request, {
      plan,
    });
    expect(report.status).toBe("completed");
    const call = (id: string) => executor.calls.find((c) => c.subTaskId === id)!;
    // "two" started only once "one" had ended; "three" ran beside "one".
    expect(call("two").startTick).toBeGreaterThan(call("one").endTick ?? Infinity);
    expect(call("three").startTick).toBeLessThan(call("one").endTick ?? -1);
    expect(executor.maxConcurrent).toBe(2);
  });

  it("adds the project's test and typecheck commands to a sub-task that changed files, unless told not to", async () => {
    const plan = {
      subTasks: [
        task("code", [], { checks: [{ type: "command", argv: ["npm", "test"] }] }),
        task("notes"),
        task("readme"),
        task("later", [], { projectChecks: false }),
      ],
    };
    const run = async (projectChecks?: boolean) => {
      const evaluator = checkRecorder();
      const executor = createFakeExecutor({
        script: ({ subTaskId }) => ({
          type: "success",
          ...(subTaskId === "notes"
            ? {}
            : {
                filesChanged:
                  subTaskId === "readme" ? ["README.md", "docs/guide.md"] : ["src/a.ts"],
              }),
        }),
      });
      await createManager({
        cwd: "/tmp",
        executor,
        evaluator,
        project: countingSource(),
        ...(projectChecks === undefined ? {} : { projectChecks }),
      }).run(request, { plan });
      return evaluator.seen;
    };
    const seen = await run();
    const argvs = (id: string) =>
      (seen.get(id) ?? []).map((c) => (c.type === "command" ? c.argv.join(" ") : c.type));
    // Its own `npm test` once, then the typecheck; never the lint.
    expect(argvs("code")).toEqual(["npm test", "npm run typecheck"]);
    expect(argvs("notes")).toEqual([]);
    // Documentation alone is no reason to run the tests.
    expect(argvs("readme")).toEqual([]);
    expect(argvs("later")).toEqual([]);
    const off = await run(false);
    expect(off.get("code")?.length).toBe(1);
  });
});

describe("exploring the project before the plan (`explore`)", () => {
  const exploring = (script: FakeExecutorOptions["script"]) => {
    const executor = createFakeExecutor({ script, fallback: { type: "success" } });
    const readOnly: boolean[] = [];
    const run = executor.run.bind(executor);
    executor.run = (prompt, options) => {
      readOnly.push(options.readOnly === true);
      return run(prompt, options);
    };
    return Object.assign(executor, { readOnly });
  };

  it("runs one read-only session first; its findings reach the planner, the log and the report", async () => {
    const model = createScriptedModel({
      responses: [{ object: { facts, subTasks: [task("a"), task("b", ["a"])] } }],
    });
    const executor = exploring({
      "taskledger-explore": [
        { type: "success", text: "Findings:\n- slugify lives in src/strings.ts" },
      ],
    });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: "/tmp",
      model,
      executor,
      project: countingSource(),
      explore: true,
    }).run(request, { onEvent: (e) => events.push(e) });
    expect(report.status).toBe("completed");
    expect(executor.calls.map((c) => c.subTaskId)).toEqual(["taskledger-explore", "a", "b"]);
    expect(executor.readOnly).toEqual([true, false, false]);
    expect(executor.calls[0]?.prompt).toContain(request);
    expect(executor.calls[0]?.prompt).toContain("src/index.ts");
    const prompt = String(model.calls[0]?.messages.at(-1)?.content);
    expect(prompt).toContain("slugify lives in src/strings.ts");
    expect(prompt.indexOf("slugify lives")).toBeLessThan(prompt.indexOf(`Request:\n${request}`));
    expect(events.map((e) => e.type).slice(0, 5)).toEqual([
      "run-started",
      "project-digested",
      "explore-started",
      "explore-finished",
      "plan-created",
    ]);
    expect(report.explore).toMatchObject({
      outcome: "finished",
      findings: "Findings:\n- slugify lives in src/strings.ts",
      attempts: 1,
    });
    // Its tokens are the agents': three attempts of 1,000 input tokens each.
    expect(report.usage.agents.inputTokens).toBe(3000);
  });

  it("a session that fails or runs out of time costs the plan its findings, never the run", async () => {
    for (const explore of [
      { type: "crash" as const, message: "no binary" },
      { type: "hang" as const },
    ]) {
      const model = createScriptedModel({ responses: [{ object: { subTasks: [task("a")] } }] });
      const report = await createManager({
        cwd: "/tmp",
        model,
        executor: exploring({ "taskledger-explore": [explore] }),
        explore: { timeoutMs: 1000 },
      }).run(request);
      expect(report.status).toBe("completed");
      expect(report.explore?.outcome).toBe(explore.type === "hang" ? "cancelled" : "error");
      expect(String(model.calls[0]?.messages.at(-1)?.content)).toContain(`Request:\n${request}`);
    }
  });

  it("is resumed like an attempt: cut short, it runs again; finished, never twice", async () => {
    const store = new MemoryRunStore();
    const controller = new AbortController();
    const model = createScriptedModel({
      responses: [{ object: { subTasks: [task("a")] } }, { object: { subTasks: [task("a")] } }],
    });
    const first = createManager({
      cwd: "/tmp",
      createRunId: () => "explore-run",
      model,
      executor: exploring({ "taskledger-explore": [{ type: "hang" }] }),
      store,
      explore: true,
    }).start(request, { abortSignal: controller.signal });
    first.on("explore-started", () => setTimeout(() => controller.abort(), 20));
    expect((await first.result).status).toBe("cancelled");
    const again = exploring({
      "taskledger-explore": [{ type: "success", text: "Findings: none" }],
      a: [{ type: "hang" }],
    });
    const controller2 = new AbortController();
    const second = createManager({ cwd: "/tmp", model, executor: again, store }).resume(
      "explore-run",
      { abortSignal: controller2.signal },
    );
    second.on("sub-task-started", () => controller2.abort());
    expect((await second.result).status).toBe("cancelled");
    expect(again.calls.map((c) => [c.subTaskId, c.attempt])).toEqual([
      ["taskledger-explore", 2],
      ["a", 1],
    ]);
    const third = exploring({});
    const report = await createManager({ cwd: "/tmp", model, executor: third, store }).resume(
      "explore-run",
    ).result;
    expect(report.status).toBe("completed");
    expect(third.calls.map((c) => c.subTaskId)).toEqual(["a"]);
    expect(report.explore).toMatchObject({ findings: "Findings: none", attempts: 2 });
  });
});
