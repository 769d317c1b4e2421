import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { AgentName } from "@taskledger/executor";
import { createModelServer } from "@taskledger/testing";
import type { RunOptions } from "../options/cli-options.js";
import { terminalText } from "../output/terminal-text.js";
import { compatibleProviderId } from "../runtime/runtime.js";
import { createDemoReplies, demoRequest } from "./demo-scenario.js";

export interface DemoSetup {
  request: string;
  /** Where the agents work. */
  cwd: string;
  options: RunOptions;
  /** Prints the files the agents produced, then stops the server and removes the directory. */
  finish(write: (text: string) => void): Promise<void>;
}

/**
 * The offline demo: the scripted model server on 127.0.0.1 plays both the manager's model and the
 * agents' model, and the real opencode CLI (or Claude Code, or Codex) does the work in a
 * temporary directory.
 */
export async function setUpDemo(base: {
  json: boolean;
  keep: boolean;
  concurrency: number;
  agent?: AgentName;
}): Promise<DemoSetup> {
  const agent = base.agent ?? "opencode";
  const server = await createModelServer({ replies: createDemoReplies(agent) });
  const cwd = await mkdtemp(join(tmpdir(), "taskledger-demo-"));
  // A repository, so the demo shows isolation: each attempt in its own worktree, merged at the end.
  const isolated = await promisify(execFile)("git", ["init", "-q"], { cwd }).then(
    () => true,
    () => false,
  );
  return {
    request: demoRequest,
    cwd,
    options: {
      provider: "openai-compatible",
      model: "demo-manager",
      baseURL: server.openaiBaseURL,
      agent,
      agentModel: agent === "opencode" ? `${compatibleProviderId}/demo-agent` : "demo-agent",
      agentEndpoint: {
        anthropicBaseURL: server.anthropicBaseURL,
        openaiBaseURL: server.openaiBaseURL,
        key: "demo-key",
      },
      opencodeConfig: undefined,
      cwd,
      concurrency: base.concurrency,
      maxRetries: 2,
      maxSubTasks: 20,
      store: undefined,
      json: base.json,
      yes: true,
      dryRun: false,
      alternateAgentModels: [],
      bestOf: undefined,
      integration: "batch",
      acceptance: { rounds: 1 },
      replan: true,
      projectChecks: true,
      explore: false,
      isolation: isolated ? "worktree" : "shared",
      apply: true,
      executor: "server",
      maxCostUsd: undefined,
      prices: undefined,
      otlp: undefined,
      queue: undefined,
      // The demo's repository is removed at its end: nothing of it is worth keeping.
      environment: { dependencies: true, include: [], setup: undefined, slots: false },
      checks: undefined,
      configPath: undefined,
      // Confined where the OS sandbox works, as every run is by default.
      sandbox: { mode: "auto", allowHosts: [] },
      // Its servers would serve a directory removed at its end: none is worth keeping warm.
      daemon: false,
    },
    async finish(write) {
      try {
        const names = (await readdir(cwd)).filter((name) => !name.startsWith(".")).sort();
        write(`\nFiles in ${cwd}:\n`);
        for (const name of names) {
          const content = await readFile(join(cwd, name), "utf8").catch(() => "(unreadable)");
          // The agents wrote these files: shown as text, never as terminal commands.
          write(
            `\n── ${terminalText(name)}\n${terminalText(content.slice(0, 2000), { multiline: true })}`,
          );
        }
      } finally {
        await server.close();
        if (!base.keep) await rm(cwd, { recursive: true, force: true });
      }
    },
  };
}
