// The integration gate and the acceptance judge (what they cost). A fake agent (@taskledger/testing's
// FakeExecutor, wrapped to write a file of its own in its worktree) in a real git repository this
// bench makes, real worktrees (gitWorkspaces) and real command checks (createEvaluator's runChecks):
// (a) makespan with `integration: "batch"` against `"off"`, on a wide graph and on a chain, with a
// run-wide check of 1 s; (b) gate runs per completed sub-task when nothing breaks; (c) one part
// that breaks the merged result in a batch of four: the runs the bisection takes, and that the
// other three land; (d) the acceptance call's tokens as a share of a run of 10 sub-tasks (the
// scripted model server's estimates, agents at the demo's tokens per attempt). Counts and ratios;
// the makespans move with the machine.
import { mkdtempSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import {
  type CheckInput,
  createManager,
  type Executor,
  type IntegrationMode,
  type RunEvent,
  type RunEventOf,
  type SubTaskInput,
  totalTokens,
} from "@taskledger/core";
import { createEvaluator } from "@taskledger/evaluator";
import { gitWorkspaces } from "@taskledger/git-workspace";
import { createModel } from "@taskledger/llm";
import {
  createFakeExecutor,
  createGitRepo,
  createModelServer,
  type FakeAttempt,
  scriptByRole,
  tempDirectory,
} from "@taskledger/testing";

// The runs work in directories of their own, never in this repository; kept slots too.
// Removed when the process ends, however it ends (an error, Ctrl-C).
const benchDir = tempDirectory("taskledger-bench-gate-");
process.env.TASKLEDGER_CACHE_DIR ??= join(benchDir, "cache");

/** The run-wide check: a command that takes 1 s and passes. */
const oneSecondCheck: CheckInput = {
  type: "command",
  argv: [process.execPath, "-e", "setTimeout(() => {}, 1000)"],
};

/** A repository of `files` small files in directories of 100. */
function repository(files: number): string {
  const contents: Record<string, string> = {};
  for (let i = 0; i < files; i++) contents[`src/d${Math.floor(i / 100)}/f${i}.txt`] = `${i}\n`;
  return createGitRepo(mkdtempSync(join(benchDir, "repo-")), contents);
}

type Script = (call: { subTaskId: string; attempt: number }) => FakeAttempt;
/** What an attempt leaves: each path's new text, or null to remove it. */
type Files = (subTaskId: string, attempt: number) => Record<string, string | null>;

/** The fake agent: plays its scripted attempt, then writes (or removes) its files where it worked. */
function writingAgent(script: Script, files: Files): Executor {
  const fake = createFakeExecutor({ script });
  return {
    async run(prompt, options) {
      const result = await fake.run(prompt, options);
      for (const [path, text] of Object.entries(files(options.subTask.id, options.attempt))) {
        if (text === null) await rm(join(options.cwd, path), { force: true });
        else await writeFile(join(options.cwd, path), text);
      }
      return result;
    },
  };
}

const node = (id: string, dependsOn: string[] = []): SubTaskInput => ({
  id,
  title: id,
  description: id,
  successCriteria: ["done"],
  dependsOn,
});

/** A deterministic pseudo-random source, so every run measures the same durations. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

interface GateRun {
  ms: number;
  records: RunEvent[];
  status: string;
}

const of = <K extends RunEvent["type"]>(records: readonly RunEvent[], type: K) =>
  records.filter((r): r is RunEventOf<K> => r.type === type);

async function runPlan(
  repo: string,
  subTasks: SubTaskInput[],
  options: {
    integration: IntegrationMode;
    concurrency: number;
    executor: Executor;
    checks: CheckInput[];
  },
): Promise<GateRun> {
  const records: RunEvent[] = [];
  const manager = createManager({
    cwd: repo,
    executor: options.executor,
    evaluator: createEvaluator(),
    checks: options.checks,
    concurrency: options.concurrency,
    maxSubTasks: 50,
    maxRetries: 2,
    isolation: "worktree",
    workspaces: gitWorkspaces({ slots: { maxSlots: 16 } }),
    // Every run starts from the same tree: nothing is applied to the repository.
    apply: false,
    integration: options.integration,
  });
  const started = performance.now();
  const report = await manager.run("bench", {
    plan: { subTasks },
    onEvent: (e) => records.push(e),
  });
  return { ms: performance.now() - started, records, status: report.status };
}

interface Graph {
  name: string;
  concurrency: number;
  subTasks: SubTaskInput[];
  durations: Map<string, number>;
}

function gateGraphs(unitMs: number): Graph[] {
  const wide = Array.from({ length: 8 }, (_, i) => node(`w${i}`));
  const rand = random(5);
  const chain = Array.from({ length: 6 }, (_, i) => node(`c${i}`, i ? [`c${i - 1}`] : []));
  return [
    {
      name: "8 independent, concurrency 4, equal attempts",
      concurrency: 4,
      subTasks: wide,
      // A wave's four completions within milliseconds: the best case for batching.
      durations: new Map(wide.map((s) => [s.id, unitMs])),
    },
    {
      name: "8 independent, concurrency 4, varied attempts",
      concurrency: 4,
      subTasks: wide,
      // unitMs to 2 × unitMs: completions close together, not at the same instant.
      durations: new Map(wide.map((s) => [s.id, Math.round(unitMs * (1 + rand()))])),
    },
    {
      name: "chain of 6",
      concurrency: 4,
      subTasks: chain,
      durations: new Map(chain.map((s) => [s.id, unitMs])),
    },
  ];
}

export interface GateMakespanRow {
  graph: string;
  unitMs: number;
  subTasks: number;
  offMs: number;
  batchMs: number;
  ratio: number;
  /** Gate runs on a part's merge (not the final tip), per completed sub-task, over the batch runs. */
  runsPerCompleted: number;
  /** Parts each gate run checked, in order, over the batch runs. */
  batches: number[];
  finalRuns: number;
}

/**
 * (a) and (b): each graph and attempt length in one repository: a warm-up run (its slots are kept,
 * as a user's second run finds them), then `off` and `batch` alternately, `rounds` times each.
 */
export async function benchGateMakespan(
  unitsMs = [2000, 8000],
  rounds = 2,
): Promise<GateMakespanRow[]> {
  const rows: GateMakespanRow[] = [];
  for (const unitMs of unitsMs) {
    for (const graph of gateGraphs(unitMs)) {
      const repo = repository(1000);
      const executor = writingAgent(
        ({ subTaskId }) => ({ type: "success", delayMs: graph.durations.get(subTaskId)! }),
        (id) => ({ [`${id}.txt`]: `${id}\n` }),
      );
      const run = (integration: IntegrationMode) =>
        runPlan(repo, graph.subTasks, {
          integration,
          concurrency: graph.concurrency,
          executor,
          checks: [oneSecondCheck],
        });
      const warm = await run("batch");
      if (warm.status !== "completed") throw new Error(`${graph.name}: warm-up ${warm.status}`);
      const off: number[] = [];
      const batch: GateRun[] = [];
      for (let round = 0; round < rounds; round++) {
        const a = await run("off");
        const b = await run("batch");
        if (a.status !== "completed" || b.status !== "completed") {
          throw new Error(`${graph.name}: ${a.status} / ${b.status}`);
        }
        off.push(a.ms);
        batch.push(b);
      }
      const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
      const checked = batch.flatMap((b) => of(b.records, "integration-checked"));
      const partRuns = checked.filter((c) => !c.final);
      const completed = batch.flatMap((b) => of(b.records, "sub-task-completed")).length;
      const offMs = mean(off);
      const batchMs = mean(batch.map((b) => b.ms));
      rows.push({
        graph: graph.name,
        unitMs,
        subTasks: graph.subTasks.length,
        offMs: Math.round(offMs),
        batchMs: Math.round(batchMs),
        ratio: batchMs / offMs,
        runsPerCompleted: partRuns.length / completed,
        batches: partRuns.map((c) => c.parts.length),
        finalRuns: checked.filter((c) => c.final).length,
      });
    }
  }
  return rows;
}

export interface GateBreakRow {
  /** The parts of the batch, in merge order, and the one that breaks the merged result. */
  batch: string[];
  breaker: string;
  /** Gate runs from the batch's first to its last, before the breaking part's retry. */
  runs: { parts: string[]; passed: boolean }[];
  /** Every gate run of the run: the lead's, the batch's and the retry's (the final tip's too). */
  allRuns: number;
  /** The other three: landed from their first attempt. */
  landed: string[];
  /** The breaking part: sent back once, then landed from its second attempt. */
  sentBack: number;
  breakerLandedAttempt: number | undefined;
  status: string;
}

/**
 * (c): a lead sub-task lands first; four parts started before it landed finish while its gate
 * run goes on and are gated as one batch. One of them (`p2`) writes `break.txt`, which fails the
 * check once merged with the lead's `lead.txt` (it passes in its own worktree, made before the
 * lead landed): the batch fails, is bisected, `p2` is sent back and its second attempt (which
 * takes `break.txt` out) lands. The check takes 1 s, 5 s on the lead alone, so that the four
 * finish while the lead is checked.
 */
export async function benchGateBreak(): Promise<GateBreakRow> {
  const parts = ["p0", "p1", "p2", "p3"];
  const check: CheckInput = {
    type: "command",
    argv: [
      process.execPath,
      "-e",
      [
        'const fs = require("node:fs");',
        'const lead = fs.existsSync("lead.txt");',
        `const parts = ${JSON.stringify(parts)}.some((p) => fs.existsSync(p + ".txt"));`,
        'const broken = lead && fs.existsSync("break.txt");',
        "setTimeout(() => process.exit(broken ? 1 : 0), lead && !parts ? 5000 : 1000);",
      ].join(" "),
    ],
  };
  const repo = repository(1000);
  const executor = writingAgent(
    ({ subTaskId }) => ({ type: "success", delayMs: subTaskId === "lead" ? 200 : 7000 }),
    (id, attempt) => ({
      [`${id}.txt`]: `${id}\n`,
      // Its retry starts from its own work, told what failed: it takes the breaking file out.
      ...(id === "p2" ? { "break.txt": attempt === 1 ? "relies on the old base\n" : null } : {}),
    }),
  );
  const subTasks = [node("lead"), ...parts.map((p) => node(p))];
  // Slots made once, as a user's second run finds them: the four must finish while the lead is
  // checked, not while slots are made.
  const warm = await runPlan(repo, subTasks, {
    integration: "batch",
    concurrency: 5,
    executor: writingAgent(
      () => ({ type: "success", delayMs: 100 }),
      (id) => ({ [`${id}.txt`]: `${id}\n` }),
    ),
    checks: [oneSecondCheck],
  });
  if (warm.status !== "completed") throw new Error(`break bench: warm-up ${warm.status}`);
  const run = await runPlan(repo, subTasks, {
    integration: "batch",
    concurrency: 5,
    executor,
    checks: [check],
  });
  const checked = of(run.records, "integration-checked").filter((c) => !c.final);
  const first = checked.findIndex((c) => c.parts.some((p) => parts.includes(p)));
  const retried = run.records.findIndex(
    (r) => r.type === "attempt-finished" && r.subTaskId === "p2" && r.attempt === 2,
  );
  const batchRuns = checked.filter((c, i) => {
    if (i < first) return false;
    return retried < 0 || run.records.indexOf(c) < retried;
  });
  const completed = of(run.records, "sub-task-completed");
  return {
    batch: checked[first]?.parts ?? [],
    breaker: "p2",
    runs: batchRuns.map((c) => ({ parts: c.parts, passed: c.passed })),
    allRuns: of(run.records, "integration-checked").length,
    landed: completed
      .filter((c) => c.subTaskId !== "p2" && c.subTaskId !== "lead" && c.attempts === 1)
      .map((c) => c.subTaskId),
    sentBack: of(run.records, "sub-task-integration-failed").filter((r) => r.subTaskId === "p2")
      .length,
    breakerLandedAttempt: completed.find((c) => c.subTaskId === "p2")?.attempts,
    status: run.status,
  };
}

export interface AcceptanceShareRow {
  subTasks: number;
  acceptanceTokens: number;
  acceptanceInput: number;
  managerTokens: number;
  agentTokens: number;
  /** Of everything the run spent: manager (plan, judges, acceptance) and agents. */
  shareOfRun: number;
  shareOfManager: number;
}

/** What one agent attempt costs in this estimate: the demo's, as row 5 of `npm run bench` uses. */
export const agentTokensPerAttempt = 13_565;

/**
 * (d): a scripted plan of `n` sub-tasks (each adds a source file of 40 lines and its test), the
 * judge and the acceptance judge through the scripted model server (tokens estimated from the
 * request's bytes, 4 a token), agents at the demo's tokens per attempt, worktrees so that the
 * acceptance reads the combined change's digest.
 */
export async function benchAcceptanceShare(n = 10): Promise<AcceptanceShareRow> {
  const subTasks: SubTaskInput[] = Array.from({ length: n }, (_, i) => ({
    id: `step-${i}`,
    title: `Implement part ${i} of the feature`,
    description: `Implement part ${i}: add src/part-${i}.ts with its function, export it from src/index.ts and cover it with a unit test in src/part-${i}.test.ts.`,
    successCriteria: [`src/part-${i}.ts exists`, "npm test passes"],
    dependsOn: i > 0 && i % 3 !== 0 ? [`step-${i - 1}`] : [],
    checks: [],
  }));
  const server = await createModelServer({
    replies: scriptByRole({
      plan: { text: JSON.stringify({ subTasks }) },
      judge: {
        text: JSON.stringify({
          completed: true,
          summary: "Added the part, exported it and tested it; npm test passes.",
          outputData: "src/part.ts exports part(); tests in src/part.test.ts",
          feedback: "",
        }),
      },
      // `accept` left out: satisfied.
    }),
  });
  try {
    const model = createModel({
      provider: "openai-compatible",
      model: "bench",
      baseURL: server.openaiBaseURL,
    });
    const source = (i: number) =>
      Array.from(
        { length: 40 },
        (_, k) => `export const part${i}Step${k} = (x: number) => x + ${k};`,
      )
        .join("\n")
        .concat("\n");
    const test = (i: number) =>
      Array.from(
        { length: 20 },
        (_, k) => `test("part ${i} step ${k}", () => expect(part${i}Step${k}(1)).toBe(${k + 1}));`,
      )
        .join("\n")
        .concat("\n");
    const fake = createFakeExecutor({
      fallback: {
        type: "success",
        text: "I added src/part.ts with the function, exported it from src/index.ts and wrote src/part.test.ts; npm test passes (12 tests).",
        usage: { inputTokens: agentTokensPerAttempt - 400, outputTokens: 400 },
      },
    });
    const executor: Executor = {
      async run(prompt, options) {
        const result = await fake.run(prompt, options);
        const i = options.subTask.id.replace("step-", "");
        await writeFile(join(options.cwd, `part-${i}.ts`), source(Number(i)));
        await writeFile(join(options.cwd, `part-${i}.test.ts`), test(Number(i)));
        return result;
      },
    };
    const repo = repository(100);
    const manager = createManager({
      cwd: repo,
      model,
      executor,
      evaluator: createEvaluator({ model }),
      maxSubTasks: n,
      concurrency: 4,
      isolation: "worktree",
      workspaces: gitWorkspaces({ slots: { maxSlots: 16 } }),
      apply: false,
    });
    const request = `Build the feature in ${n} parts, then test each part and document it.`;
    const planned = await manager.plan(request);
    const report = await manager.run(request, { plan: planned.ledger });
    if (report.status !== "completed" || report.acceptance?.verdict !== "satisfied") {
      throw new Error(`acceptance bench: ${report.status}, ${report.acceptance?.verdict}`);
    }
    const acceptanceTokens = totalTokens(report.acceptance.usage);
    const managerTokens = totalTokens(report.usage.manager) + totalTokens(planned.usage);
    const agentTokens = totalTokens(report.usage.agents);
    return {
      subTasks: n,
      acceptanceTokens,
      acceptanceInput: report.acceptance.usage.inputTokens,
      managerTokens,
      agentTokens,
      shareOfRun: acceptanceTokens / (managerTokens + agentTokens),
      shareOfManager: acceptanceTokens / managerTokens,
    };
  } finally {
    await server.close();
  }
}

const fixed = (n: number, digits = 2) => n.toFixed(digits);
/** "1, 3, 1, 3", or "1 × 12" when every run checked one size. */
const sizes = (xs: number[]) =>
  xs.length > 4 && xs.every((x) => x === xs[0]) ? `${xs[0]} × ${xs.length}` : xs.join(", ");

/** The tables of docs/performance.md §17. */
export async function integrationGateReport(unitsMs?: number[]): Promise<string> {
  const load = () => loadavg()[0]!.toFixed(1);
  const loadAtStart = load();
  const makespan = await benchGateMakespan(unitsMs);
  const broken = await benchGateBreak();
  const share = await benchAcceptanceShare(10);
  const lines = [
    `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}; load average ${loadAtStart} at the start, ${load()} at the end.`,
    "",
    "| graph | attempts | off | batch | batch / off | gate runs per completed sub-task | parts per gate run (both runs) |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...makespan.map(
      (r) =>
        `| ${r.graph} | ${r.unitMs / 1000}${r.graph.includes("varied") ? `–${(2 * r.unitMs) / 1000}` : ""} s | ${fixed(r.offMs / 1000, 1)} s | ${fixed(r.batchMs / 1000, 1)} s | **${fixed(r.ratio)}×** | ${fixed(r.runsPerCompleted)} | ${sizes(r.batches)} |`,
    ),
    "",
    `Final-tip runs: ${makespan.reduce((n, r) => n + r.finalRuns, 0)} (a tip whose tree was gated is not run again).`,
    "",
    `Breaking part in a batch: batch ${broken.batch.join(", ")} (breaker ${broken.breaker}); ${broken.runs.length} gate runs: ${broken.runs.map((r) => `[${r.parts.join(", ")}] ${r.passed ? "passed" : "failed"}`).join("; ")}; landed from their first attempt: ${broken.landed.join(", ") || "none"}; ${broken.breaker} sent back ${broken.sentBack}×, landed from attempt ${broken.breakerLandedAttempt ?? "none"}; ${broken.allRuns} gate runs in the run; run ${broken.status}.`,
    "",
    `Acceptance at ${share.subTasks} sub-tasks: ${share.acceptanceTokens.toLocaleString("en")} tokens (${share.acceptanceInput.toLocaleString("en")} in), ${fixed(share.shareOfRun * 100, 1)}% of the run's ${(share.managerTokens + share.agentTokens).toLocaleString("en")} (manager ${share.managerTokens.toLocaleString("en")}, agents ${share.agentTokens.toLocaleString("en")} at ${agentTokensPerAttempt.toLocaleString("en")} per attempt), ${fixed(share.shareOfManager * 100, 1)}% of the manager's.`,
  ];
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // `node bench/integration-gate.ts [attempt ms …]`: the attempt lengths of (a) and (b).
  const units = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => n > 0);
  console.log(await integrationGateReport(units.length > 0 ? units : undefined));
}
