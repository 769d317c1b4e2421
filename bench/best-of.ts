// Best of N (issue 27): a simulated agent whose attempts succeed with probability p, over 200
// independent sub-tasks in real git worktrees, one attempt at a time with retries against rounds
// of 3 and 5 candidates; then the comparative choice when only one candidate is right. Builds its
// own repositories in a temporary directory; every draw is seeded, so the shares and token counts
// are the same wherever it is started (the makespans move with the machine).
import { mkdtempSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  createManager,
  type Executor,
  estimateTokens,
  type GenerateRequest,
  type GenerateResult,
  type LanguageModel,
  outcomeEvaluator,
  type RunEvent,
  type SubTaskInput,
  type Usage,
} from "@taskledger/core";
import { gitWorkspaces } from "@taskledger/git-workspace";
import { createGitRepo, tempDirectory } from "@taskledger/testing";

// Removed when the process ends, however it ends (an error, Ctrl-C).
const benchDir = tempDirectory("taskledger-bench-best-of-");
process.env.TASKLEDGER_CACHE_DIR ??= join(benchDir, "cache");

/** What one simulated agent session costs: a mid-sized attempt of the demo's order. */
const agentUsage: Usage = {
  inputTokens: 20_000,
  outputTokens: 1_000,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
};

/** A number in [0, 1) fixed by its key: the same draw for the same sub-task and attempt, always. */
function draw(key: string): number {
  let h = 2_166_136_261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16_777_619);
  h = Math.imul(h ^ (h >>> 15), 2_246_822_507);
  h = Math.imul(h ^ (h >>> 13), 3_266_489_909);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

const sum = { right: "return a + b; // adds", wrong: "return a - b; // adds" };

/**
 * A file of `lines` lines with the line that decides whether it is right at a place fixed by
 * `key`, so a judge that reads it finds out only if that line is in what it was shown.
 */
function solution(key: string, lines: number, right: boolean): string {
  const at = Math.floor(draw(`${key}:at`) * lines);
  const body = Array.from({ length: lines }, (_, i) =>
    i === at ? `  ${right ? sum.right : sum.wrong}` : `  const v${i} = ${i}; // step ${i}`,
  );
  return `function sum(a, b) {\n${body.join("\n")}\n}\n`;
}

interface AgentWorld {
  /** Whether attempt `attempt` of sub-task `id` does the sub-task. */
  right(id: string, attempt: number): boolean;
  /** Whether its checks see it: a wrong attempt then ends incomplete; else it passes weak checks. */
  checksTell: boolean;
  lines: number;
  delayMs: number;
}

/** The simulated agent: takes its time, writes its solution, and ends finished or not. */
function simulatedAgent(world: AgentWorld, stats: { running: number; peak: number }): Executor {
  return {
    async run(_prompt, options) {
      stats.running++;
      stats.peak = Math.max(stats.peak, stats.running);
      try {
        const id = options.subTask.id;
        const right = world.right(id, options.attempt);
        await new Promise((resolve) => setTimeout(resolve, world.delayMs));
        await writeFile(
          join(options.cwd, `${id}.js`),
          solution(`${id}:${options.attempt}`, world.lines, right),
        );
        const finished = right || !world.checksTell;
        return {
          outcome: finished ? "finished" : "truncated",
          // Unique per attempt: identical failures would be taken for an agent that is stuck.
          finalText: finished
            ? `Wrote ${id}.js (attempt ${options.attempt}).`
            : `Attempt ${options.attempt} ran out before ${id}.js was right.`,
          toolCalls: [],
          stepFinishReasons: [finished ? "stop" : "length"],
          filesChanged: [`${id}.js`],
          usage: agentUsage,
          durationMs: world.delayMs,
        };
      } finally {
        stats.running--;
      }
    },
  };
}

/**
 * The comparative judge, simulated as a reader that is right whenever it can be: it names the
 * candidate whose diff, as the prompt shows it, holds the right line; when none shows one it
 * names the first. Its prompt is the real one, so its tokens are what a model would be sent.
 */
function readingJudge(): LanguageModel & { calls: number } {
  const judge = {
    provider: "bench",
    modelId: "reading-judge",
    calls: 0,
    async generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
      judge.calls++;
      const prompt = request.messages.map((m) => m.content).join("\n");
      const sections = prompt.split(/^## Candidate attempt /m).slice(1);
      const seen = sections.map((s) => ({
        attempt: Number.parseInt(s, 10),
        right: s.includes(`+  ${sum.right}`),
      }));
      const winner = (seen.find((s) => s.right) ?? seen[0])?.attempt ?? null;
      const answer = { winner, reasons: "Its diff adds the arguments.", losers: [] };
      const text = JSON.stringify(answer);
      return {
        text,
        object: answer as T,
        usage: {
          inputTokens: estimateTokens(`${request.system ?? ""}\n${prompt}`),
          outputTokens: estimateTokens(text),
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
        },
        finishReason: "stop" as const,
      };
    },
  };
  return judge;
}

interface Trial {
  subTasks: number;
  candidates: number;
  world: AgentWorld;
  concurrency: number;
  judge: boolean;
}

interface TrialResult {
  completed: number;
  completedFirstRound: number;
  makespanMs: number;
  attempts: number;
  agentTokens: number;
  judgeTokens: number;
  judgeCalls: number;
  peakAgents: number;
  /** Rounds whose winner is a right candidate, of rounds with a winner. */
  rightWinners: number;
  winners: number;
}

async function trial(t: Trial): Promise<TrialResult> {
  const repo = createGitRepo(mkdtempSync(join(benchDir, "repo-")), {
    "README.md": "bench\n",
    ...Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`src/m${i}.txt`, `${i}\n`])),
  });
  const plan = {
    subTasks: Array.from(
      { length: t.subTasks },
      (_, i): SubTaskInput => ({
        id: `s${i}`,
        title: `write s${i}.js`,
        description: "Write sum(a, b) that returns the sum of its arguments.",
        successCriteria: ["sum(a, b) returns a + b"],
        risky: true,
      }),
    ),
  };
  const stats = { running: 0, peak: 0 };
  const judge = t.judge ? readingJudge() : undefined;
  const events: RunEvent[] = [];
  const manager = createManager({
    cwd: repo,
    ...(judge ? { model: judge } : {}),
    executor: simulatedAgent(t.world, stats),
    evaluator: outcomeEvaluator,
    concurrency: t.concurrency,
    maxSubTasks: t.subTasks,
    maxRetries: 2,
    replan: { enabled: false },
    ...(t.candidates > 1 ? { bestOf: { candidates: t.candidates, for: "risky" as const } } : {}),
    isolation: "worktree",
    workspaces: gitWorkspaces({ slots: { maxSlots: t.concurrency * t.candidates } }),
    project: false,
  });
  const started = performance.now();
  const report = await manager.run("bench", { plan, onEvent: (e) => events.push(e) });
  const makespanMs = Math.round(performance.now() - started);
  const chosen = events.flatMap((e) => (e.type === "candidates-chosen" ? [e] : []));
  const firstRound =
    t.candidates > 1
      ? chosen.filter((e) => e.round === 1 && e.winner !== undefined).length
      : events.filter((e) => e.type === "sub-task-completed" && e.attempts === 1).length;
  const withWinner = chosen.filter((e) => e.winner !== undefined);
  return {
    completed: report.subTasks.filter((s) => s.status === "completed").length,
    completedFirstRound: firstRound,
    makespanMs,
    attempts: events.filter((e) => e.type === "sub-task-started").length,
    agentTokens: report.usage.agents.inputTokens + report.usage.agents.outputTokens,
    judgeTokens: report.usage.manager.inputTokens + report.usage.manager.outputTokens,
    judgeCalls: judge?.calls ?? 0,
    peakAgents: stats.peak,
    rightWinners: withWinner.filter((e) => t.world.right(e.subTaskId, e.winner!)).length,
    winners: withWinner.length,
  };
}

export interface BestOfRow extends TrialResult {
  p: number;
  candidates: number;
  subTasks: number;
}

/**
 * For each p and N: `subTasks` independent risky sub-tasks, `concurrency` at once, attempts of
 * `delayMs`, up to 2 retries each, no replan; a wrong attempt fails its checks.
 */
export async function benchBestOf(
  subTasks = 200,
  concurrency = 4,
  delayMs = 100,
): Promise<BestOfRow[]> {
  const rows: BestOfRow[] = [];
  for (const p of [0.2, 0.4, 0.6]) {
    for (const candidates of [1, 3, 5]) {
      const world: AgentWorld = {
        right: (id, attempt) => draw(`${p}:${id}:${attempt}`) < p,
        checksTell: true,
        lines: 20,
        delayMs,
      };
      const r = await trial({ subTasks, candidates, world, concurrency, judge: true });
      rows.push({ p, candidates, subTasks, ...r });
      process.stderr.write(
        `best-of p=${p} N=${candidates}: ${r.completedFirstRound}/${subTasks} first round, ${r.completed} in all, ${r.makespanMs} ms\n`,
      );
    }
  }
  return rows;
}

export interface ChoiceRow {
  candidates: number;
  lines: number;
  chooser: "judge" | "tie rule";
  right: number;
  rounds: number;
  judgeTokensPerRound: number;
}

/**
 * Exactly one right candidate per round, every candidate passing weak checks: how often the
 * merged one is the right one, with the reading judge (bounded prompt) and with the tie rule
 * alone, for solutions of 20, 2,000 and 20,000 lines.
 */
export async function benchCandidateChoice(subTasks = 40): Promise<ChoiceRow[]> {
  const rows: ChoiceRow[] = [];
  for (const candidates of [3, 5]) {
    for (const lines of [20, 2_000, 20_000]) {
      for (const chooser of ["judge", "tie rule"] as const) {
        const rightOne = (id: string) => 1 + Math.floor(draw(`one:${id}`) * candidates);
        const world: AgentWorld = {
          right: (id, attempt) => attempt === rightOne(id),
          checksTell: false,
          lines,
          delayMs: 10,
        };
        const r = await trial({
          subTasks,
          candidates,
          world,
          concurrency: 4,
          judge: chooser === "judge",
        });
        rows.push({
          candidates,
          lines,
          chooser,
          right: r.rightWinners,
          rounds: r.winners,
          judgeTokensPerRound: r.judgeCalls ? Math.round(r.judgeTokens / r.judgeCalls) : 0,
        });
      }
    }
  }
  return rows;
}

/** Two panels: share completed in the first round, and tokens per completed sub-task, by p. */
export function bestOfPlot(rows: BestOfRow[]): string {
  const ps = [...new Set(rows.map((r) => r.p))];
  const ns = [...new Set(rows.map((r) => r.candidates))];
  const colours = ["#6b7280", "#2563eb", "#dc2626"];
  const width = 760;
  const height = 300;
  const panel = (
    x0: number,
    title: string,
    value: (r: BestOfRow) => number,
    max: number,
    label: (v: number) => string,
  ) => {
    const left = x0 + 50;
    const top = 40;
    const w = 300;
    const h = 200;
    const group = w / ps.length;
    const bar = (group - 20) / ns.length;
    const parts = [
      `<text x="${x0 + 200}" y="20" text-anchor="middle" font-size="14">${title}</text>`,
      `<line x1="${left}" y1="${top + h}" x2="${left + w}" y2="${top + h}" stroke="#111"/>`,
      `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + h}" stroke="#111"/>`,
    ];
    for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
      const y = top + h - tick * h;
      parts.push(
        `<text x="${left - 6}" y="${y + 4}" text-anchor="end" font-size="10">${label(tick * max)}</text>`,
        `<line x1="${left}" y1="${y}" x2="${left + w}" y2="${y}" stroke="#e5e7eb"/>`,
      );
    }
    ps.forEach((p, i) => {
      const gx = left + i * group + 10;
      parts.push(
        `<text x="${gx + (group - 20) / 2}" y="${top + h + 16}" text-anchor="middle" font-size="11">p = ${p}</text>`,
      );
      ns.forEach((n, j) => {
        const r = rows.find((row) => row.p === p && row.candidates === n)!;
        const v = value(r);
        const bh = (v / max) * h;
        parts.push(
          `<rect x="${gx + j * bar}" y="${top + h - bh}" width="${bar - 2}" height="${bh}" fill="${colours[j % colours.length]}"/>`,
        );
      });
    });
    return parts.join("\n");
  };
  const share = (r: BestOfRow) => r.completedFirstRound / r.subTasks;
  const perCompleted = (r: BestOfRow) => (r.agentTokens + r.judgeTokens) / Math.max(1, r.completed);
  const maxTokens = Math.max(...rows.map(perCompleted)) * 1.1;
  const legend = ns
    .map(
      (n, j) =>
        `<rect x="${200 + j * 130}" y="${height - 22}" width="12" height="12" fill="${colours[j % colours.length]}"/><text x="${216 + j * 130}" y="${height - 12}" font-size="12">${n === 1 ? "best-of-1 + retries" : `best-of-${n}`}</text>`,
    )
    .join("\n");
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    panel(0, "Share completed in the first round", share, 1, (v) => `${Math.round(v * 100)}%`),
    panel(
      380,
      "Tokens per completed sub-task",
      perCompleted,
      maxTokens,
      (v) => `${Math.round(v / 1000)}k`,
    ),
    legend,
    "</svg>",
    "",
  ].join("\n");
}

const percent = (a: number, b: number) => `${b ? Math.round((a / b) * 100) : 0}%`;

/** The tables of docs/performance.md, and the plot written to docs/images/best-of.svg. */
export async function bestOfReport(): Promise<string> {
  const rows = await benchBestOf();
  const choice = await benchCandidateChoice();
  const plot = join(import.meta.dirname, "../docs/images/best-of.svg");
  writeFileSync(plot, bestOfPlot(rows));
  const baseline = (p: number) => rows.find((r) => r.p === p && r.candidates === 1)!;
  const lines = [
    "| p | candidates | completed in the first round | completed in all | makespan | attempts | peak agents at once | tokens per completed sub-task | vs best-of-1 |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) => {
      const perCompleted = (r.agentTokens + r.judgeTokens) / Math.max(1, r.completed);
      const base = baseline(r.p);
      const basePer = (base.agentTokens + base.judgeTokens) / Math.max(1, base.completed);
      return `| ${r.p} | ${r.candidates === 1 ? "1 (+2 retries)" : r.candidates} | ${percent(r.completedFirstRound, r.subTasks)} | ${percent(r.completed, r.subTasks)} | ${(r.makespanMs / 1000).toFixed(1)} s (${(r.makespanMs / base.makespanMs).toFixed(2)}×) | ${r.attempts} | ${r.peakAgents} | ${Math.round(perCompleted).toLocaleString("en")} (judge ${Math.round(r.judgeTokens / Math.max(1, r.completed)).toLocaleString("en")}) | ${(perCompleted / basePer).toFixed(2)}× |`;
    }),
    "",
    "| candidates | solution size | chosen by | right one merged | judge prompt per round |",
    "| --- | --- | --- | --- | --- |",
    ...choice.map(
      (r) =>
        `| ${r.candidates} | ${r.lines.toLocaleString("en")} lines | ${r.chooser} | ${r.right}/${r.rounds} (${percent(r.right, r.rounds)}) | ${r.judgeTokensPerRound ? `${r.judgeTokensPerRound.toLocaleString("en")} tokens` : "none"} |`,
    ),
  ];
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await bestOfReport());
}
