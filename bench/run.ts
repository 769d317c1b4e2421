// `npm run bench`: every benchmark in one run, printed as one markdown table (docs/performance.md).
import { execFile } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { benchAgentStart } from "./agent-start.ts";
import { benchDaemonWarm } from "./daemon-warm.ts";
import { benchDigest } from "./digest.ts";
import { benchFastPath } from "./fast-path.ts";
import { benchDigestSize, benchFileAware } from "./file-aware.ts";
import { benchGitCalls } from "./git-calls.ts";
import { benchImportCost } from "./import-cost.ts";
import { benchMakespan, benchMakespanWorktrees } from "./makespan.ts";
import { demoOverhead, scriptedOverhead } from "./manager-overhead.ts";
import { benchMcpWarm } from "./mcp-warm.ts";
import { benchOpencodeCpu } from "./opencode-cpu.ts";
import { benchQueue, benchQueueOpencode } from "./queue-makespan.ts";
import { benchSandboxCost } from "./sandbox-cost.ts";
import { benchSchedulerOverhead } from "./scheduler-overhead.ts";
import { benchSessionStart } from "./session-start.ts";
import { benchSlotEnvironment } from "./slot-environment.ts";
import { benchTracingOverhead } from "./tracing-overhead.ts";
import { benchWorkspaceCost } from "./workspace-cost.ts";

const rows: string[][] = [];
const add = (benchmark: string, scenario: string, figure: string, note = "") => {
  rows.push([benchmark, scenario, figure, note]);
  process.stderr.write(`${benchmark} · ${scenario}: ${figure}\n`);
};
const fixed = (n: number, digits = 2) => n.toFixed(digits);
const started = performance.now();

for (const r of await benchMakespan()) {
  add(
    "1. makespan, shared",
    `${r.graph} (${r.subTasks} sub-tasks, 50–200 ms attempts)`,
    `${fixed(r.vsCriticalPath, 3)}× critical path`,
    `${fixed(r.vsSequential)}× the sequential sum (${r.makespanMs} ms vs ${r.criticalPathMs} / ${r.sequentialMs} ms)`,
  );
}

for (const r of await benchMakespanWorktrees()) {
  add(
    "1. makespan, worktrees",
    `${r.graph} (${r.subTasks} sub-tasks, 2–8 s attempts, 1,000-file repository, warm slots)`,
    `${fixed(r.vsCriticalPath, 3)}× critical path`,
    `${fixed(r.vsSequential)}× the sequential sum (${r.makespanMs} ms vs ${r.criticalPathMs} / ${r.sequentialMs} ms)`,
  );
}

for (const r of await benchSchedulerOverhead()) {
  add(
    "2. scheduler overhead",
    `${r.subTasks} sub-tasks, ${r.dependencies} dependencies`,
    `${fixed(r.usPerNodeAndEdge, 1)} µs per sub-task + dependency`,
    `${fixed(r.usPerSubTask, 1)} µs per sub-task, ${r.totalMs} ms in all`,
  );
}

const worker = join(import.meta.dirname, "event-parser-worker.ts");
const measure = async (flags: string[], mode: string, megabytes: number) => {
  const { stdout } = await promisify(execFile)(process.execPath, [
    ...flags,
    worker,
    mode,
    String(megabytes),
  ]);
  return JSON.parse(stdout) as { mbPerSecond: number; peakRssMb: number };
};
for (const megabytes of [10, 100, 1000]) {
  const parser = await measure([], "parser", megabytes);
  const baseline = await measure([], "baseline", megabytes);
  add(
    "3. event parser",
    `${megabytes} MB of opencode events`,
    `${fixed(parser.mbPerSecond, 0)} MB/s, peak RSS ${fixed(parser.peakRssMb, 0)} MB`,
    `lines + JSON.parse: ${fixed(baseline.mbPerSecond, 0)} MB/s, ${fixed(baseline.peakRssMb, 0)} MB (${fixed(parser.mbPerSecond / baseline.mbPerSecond, 1)}× faster)`,
  );
}
for (const megabytes of [100, 1000]) {
  const capped = await measure(["--max-old-space-size=48"], "parser", megabytes);
  add(
    "3. event parser",
    `${megabytes} MB, heap capped at 48 MB`,
    `peak RSS ${fixed(capped.peakRssMb, 0)} MB`,
    "completes: live memory is flat in stream size",
  );
}

for (const r of benchDigest()) {
  add(
    "4. evaluator digest",
    `transcript of ${r.transcriptTokens.toLocaleString("en")} tokens`,
    `${r.digestTokens} tokens (budget ${r.budget})`,
    `${fixed(r.msPerDigest, 2)} ms to build; final answer kept: ${r.keepsFinalAnswer ? "yes" : "NO"}`,
  );
}

const demo = await demoOverhead();
const overheadRows = [
  demo.row,
  ...(await scriptedOverhead([1, 3, 10, 30], demo.agentTokensPerAttempt)),
];
for (const r of overheadRows) {
  add(
    "5. manager tokens",
    `${r.scenario}, ${r.subTasks} sub-tasks, ${r.attempts} attempts`,
    `${fixed(r.managerShare * 100, 1)}% of all tokens`,
    `manager ${r.managerTokens}, agents ${r.agentTokens}${r.scenario === "scripted plan" ? ` (agents at the demo's ${demo.agentTokensPerAttempt} per attempt)` : ""}`,
  );
}

for (const r of await benchSessionStart()) {
  add(
    "6. opencode session start",
    `${r.setup}, ${r.parallel} at once`,
    `${fixed(r.meanWallMs / 1000)} s per attempt`,
    `${fixed(r.attemptsPerMinute, 1)} attempts/minute over ${r.attempts}`,
  );
}

for (const r of await benchAgentStart()) {
  add(
    "10. agent start",
    r.agent,
    `${fixed(r.firstRequestAloneMs / 1000)} s to the first model request alone, ${fixed(r.firstRequestFourMs / 1000)} s at 4 at once`,
    `${fixed(r.attemptsPerMinute, 1)} attempts/minute at concurrency 4 over ${r.attempts}, instant model`,
  );
}

for (const r of await benchOpencodeCpu()) {
  add(
    "10. opencode CPU per attempt",
    r.kind === "cli"
      ? "`opencode run` per attempt"
      : "a server's first 5 attempts, each in a new directory",
    `${fixed(r.defaultCpuS)} CPU-s per attempt, ${fixed(r.ftlOffCpuS)} with BUN_JSC_useFTLJIT=0`,
    `${fixed((1 - r.ftlOffCpuS / r.defaultCpuS) * 100, 0)}% less; ${r.attempts} attempts a setting, opencode's processes only`,
  );
}

for (const r of await benchWorkspaceCost()) {
  add(
    "8. worktree isolation",
    `${r.files.toLocaleString("en")}-file repository`,
    `${r.msPerAttempt} ms per attempt`,
    `reset ${r.msWorktree} + commit ${r.msCommit} + merge ${r.msMerge} ms; a new worktree (once per attempt running at a time) ${r.msNewWorktree} ms; per run: base ${r.msBase} ms, branch + apply ${r.msFinish} ms`,
  );
}

for (const r of benchGitCalls()) {
  add(
    "16. git calls",
    `a host holding ${r.heldMb} MB more (RSS ${r.rssMb} MB), ${r.calls} calls`,
    r.helper
      ? `${r.helper.msPerCall} ms per call, the loop stalled ${r.helper.loopStalledMsPerCall} ms`
      : "helper not used (under 128 MB)",
    `forked by the host itself: ${r.here.msPerCall} ms per call, the loop stalled ${r.here.loopStalledMsPerCall} ms`,
  );
}

for (const r of await benchSlotEnvironment()) {
  add(
    "9. project environment",
    `10,000 tracked files, node_modules of ${r.dependencyFiles.toLocaleString("en")} files`,
    `${r.msReusedAttempt} ms per attempt in a reused slot`,
    `without dependencies ${r.msReusedAttemptBare} ms; a new slot ${r.msNewSlot} ms, of which the environment ${r.msEnvironment} ms (a new slot without it ${r.msNewSlotBare} ms)`,
  );
}

for (const r of await benchFastPath()) {
  add(
    "11. fast path",
    `${r.run} run on the repository, concurrency ${r.concurrency} (10,000 tracked files, node_modules of 20,000, server executor, worktrees)`,
    `p50 ${fixed(r.p50Ms / 1000)} s dispatch → first model request`,
    `max ${fixed(r.maxMs / 1000)} s over ${r.attempts} attempt(s); the planner thinks 2 s meanwhile`,
  );
}

for (const r of await benchDaemonWarm()) {
  add(
    "15. warm rooms (daemon)",
    `${r.mode}, ${r.run} run, concurrency ${r.concurrency} (built CLI, 10,000 tracked files, node_modules of 20,000, ${r.confined ? "confined" : "unconfined"})`,
    `p50 ${fixed(r.p50Ms / 1000)} s dispatch → first model request`,
    `max ${fixed(r.maxMs / 1000)} s over ${r.attempts} attempt(s)${r.serverStarts === undefined ? "" : `; ${r.serverStarts} server(s) started by the daemon`}; the run took ${fixed(r.wallMs / 1000, 1)} s`,
  );
}

const mcp = await benchMcpWarm();
for (const r of mcp.runs) {
  add(
    "15. warm rooms (mcp)",
    `taskledger mcp, ${r.run} run in the server process, concurrency ${r.concurrency} (10,000 tracked files, node_modules of 20,000)`,
    `${fixed(r.firstMs / 1000)} s approval → first agent call`,
    `each sub-task's first call: p50 ${fixed(r.p50Ms / 1000)} s, max ${fixed(r.maxMs / 1000)} s over ${r.attempts}`,
  );
}
for (const r of mcp.memory) {
  add(
    "15. warm rooms (mcp)",
    `taskledger mcp memory, ${r.when} (--release-idle 20)`,
    `${r.rssMb} MB RSS, ${r.pssMb} MB PSS`,
    `${r.processes} process(es) in its tree, ${r.opencodeServers} opencode server(s)`,
  );
}

for (const r of await benchTracingOverhead()) {
  add(
    "7. tracing overhead",
    r.mode,
    `${fixed(r.ratio)}× untraced`,
    `${fixed(r.usPerAttempt, 0)} µs of manager time per attempt (${r.addedUsPerAttempt >= 0 ? "+" : ""}${fixed(r.addedUsPerAttempt, 0)} µs), ${fixed(r.spansPerAttempt, 1)} spans per attempt`,
  );
}

const queue = await benchQueue();
for (const r of queue.makespan) {
  add(
    "9. queue (fake agent)",
    `${r.subTasks} independent sub-tasks of ${r.attemptMs} ms, ${r.workers} worker(s)${r.workerProcesses === "own" ? ", each in its own process" : ""}`,
    `${fixed(r.makespanMs / 1000)} s${r.runsMs.length > 1 ? ` (median of ${r.runsMs.length}: ${fixed(Math.min(...r.runsMs) / 1000)}–${fixed(Math.max(...r.runsMs) / 1000)} s)` : ""}`,
    `${fixed(r.makespanMs / r.boundMs)}× the bound of ${fixed(r.boundMs / 1000, 0)} s (critical path ${fixed(r.attemptMs / 1000, 0)} s); a sleeping agent: what separate machines would give${r.gitPerAttempt ? `; ${r.gitPerAttempt.spawned} git processes per attempt (${r.gitPerAttempt.all} with theirs)` : ""}`,
  );
}
const o = queue.overhead;
add(
  "9. queue overhead",
  `one attempt at a time, ${o.attempts} attempts`,
  `${o.enqueueToStartMs + o.finishToResultMs} ms per attempt`,
  `enqueue to start ${o.enqueueToStartMs} ms, finish to result ${o.finishToResultMs} ms (git push, Redis, fetch, worktree); ${fixed(((o.enqueueToStartMs + o.finishToResultMs) / o.attemptMs) * 100, 0)}% of a ${o.attemptMs} ms attempt; ${o.gitPerAttempt.spawned} git processes per attempt (${o.gitPerAttempt.all} with theirs), the run's own included`,
);
for (const r of await benchQueueOpencode()) {
  add(
    "9. queue (real opencode)",
    `${r.subTasks} independent sub-tasks, ${r.workers} worker process(es) on this machine`,
    `${fixed(r.makespanMs / 1000, 1)} s`,
    `critical path (longest attempt) ${fixed(r.criticalPathMs / 1000, 1)} s, mean attempt ${fixed(r.meanAttemptMs / 1000, 1)} s: more workers on the same 2 cores make each attempt slower`,
  );
}

const imports = await benchImportCost();
const floor = imports.find((r) => r.target === "node:fs");
for (const r of imports.filter((r) => r !== floor)) {
  add(
    "10. import cost",
    `import("${r.target}")`,
    `${fixed(r.ms, 0)} ms, ${fixed(r.rssMb, 0)} MB RSS`,
    `median of 5 fresh processes; a bare Node process is ${fixed(floor?.rssMb ?? 0, 0)} MB`,
  );
}

for (const r of await benchFileAware()) {
  add(
    "12. file-aware scheduling",
    `${r.subTasks} independent sub-tasks appending to ${r.files} shared files, 0.5 s attempts, worktrees, ${r.scheduling}`,
    `${r.conflicts} merge conflicts, ${fixed(r.makespanMs / 1000, 1)} s`,
    `${r.attempts} attempts for ${r.completed}/${r.subTasks} completed`,
  );
}
for (const r of await benchDigestSize()) {
  add(
    "12. project digest",
    `${r.files.toLocaleString("en")} tracked files`,
    `${r.chars.toLocaleString("en")} characters (~${r.tokens} tokens)`,
    `made in ${r.coldMs} ms, from the cache in ${r.warmMs} ms`,
  );
}
for (const r of await benchSandboxCost(10)) {
  add(
    "14. OS sandbox",
    `${r.what}, ${r.confined ? "confined" : "unconfined"}, ${r.concurrency} at once`,
    `p50 ${fixed(r.p50Ms)} ms`,
    `p95 ${fixed(r.p95Ms)} ms over ${r.samples} samples`,
  );
}

const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
console.log(
  `Machine: ${machine}. Total bench time: ${fixed((performance.now() - started) / 1000, 0)} s.\n`,
);
console.log("| benchmark | case | figure | detail |\n| --- | --- | --- | --- |");
for (const row of rows) console.log(`| ${row.join(" | ")} |`);
