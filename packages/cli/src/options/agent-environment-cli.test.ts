import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { createModelServer, type RoleReplies, scriptByRole } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import { exitCodes } from "../cli-io.js";
import { compatibleProviderId } from "../runtime/runtime.js";
import { captureIo, compatibleArgs, processesUnder } from "../test-support/cli-harness.js";
import { bashCall, callThenAnswer, completedJudge } from "../test-support/scripted-replies.js";

const cleanups: (() => Promise<unknown>)[] = [];
// Secrets of the host's that an agent gets only when the user names them.
const hostSecrets = {
  AWS_SECRET_ACCESS_KEY: "host-aws-secret",
  GITHUB_TOKEN: "host-github-token",
  MY_SECRET: "host-my-secret",
};
const saved = {
  OPENAI_API_KEY: process.env.OPENAI_API_KEY,
  CODEX_API_KEY: process.env.CODEX_API_KEY,
};
beforeAll(() => {
  Object.assign(process.env, hostSecrets, { OPENAI_API_KEY: "sk-refused" });
  delete process.env.CODEX_API_KEY;
});
afterAll(async () => {
  for (const key of Object.keys(hostSecrets)) delete process.env[key];
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server whose agents get `agent`, and whose judge finds env.txt written. */
async function serve(agent: RoleReplies) {
  const server = await createModelServer({
    replies: scriptByRole({ agent, judge: completedJudge("env.txt was written.", "env.txt") }),
  });
  cleanups.push(() => server.close());
  return server;
}

/** What OpenAI answers a key it does not know. */
const refused = {
  status: 401,
  body: {
    error: { message: "Incorrect API key provided: sk-refused", type: "invalid_request_error" },
  },
};

/** A directory with a one-step plan, `plan.json`, and a `work/` directory for the agent. */
async function project(): Promise<{ plan: string; work: string; root: string }> {
  const root = await mkdtemp(join(tmpdir(), "agent-env-cli-"));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const plan = join(root, "plan.json");
  const step = {
    id: "env",
    title: "Print the environment",
    description: "Write the environment into env.txt.",
    successCriteria: ["env.txt exists"],
    dependsOn: [],
    // A check runs what the agent wrote: it gets the agents' list too.
    checks: [{ type: "command", argv: ["sh", "-c", "env > check-env.txt"] }],
  };
  await writeFile(plan, JSON.stringify({ subTasks: [step] }));
  const work = join(root, "work");
  await mkdir(work);
  return { plan, work, root };
}

const runArgs = (baseURL: string, plan: string, work: string, ...more: string[]) => [
  "run",
  "--plan",
  plan,
  "--yes",
  "--json",
  "--isolation",
  "shared",
  "--cwd",
  work,
  "--store",
  join(work, "..", "store"),
  ...compatibleArgs(baseURL),
  ...more,
];

describe.concurrent("an agent's environment and sign-in through the CLI", {
  timeout: 150_000,
}, () => {
  for (const executor of ["cli", "server"]) {
    it(`--pass-env gives opencode (${executor} executor) one host variable, and no other`, async () => {
      const server = await serve(
        callThenAnswer(bashCall("env > env.txt", "env"), "I wrote the environment into env.txt."),
      );
      const { plan, work } = await project();
      const t = captureIo();
      const args = runArgs(server.openaiBaseURL, plan, work, "--executor", executor);
      args.push("--agent-model", `${compatibleProviderId}/agent`, "--pass-env", "MY_SECRET");
      expect(await runCli(args, t.io), t.err()).toBe(exitCodes.completed);
      const env = await readFile(join(work, "env.txt"), "utf8");
      expect(env).toContain("MY_SECRET=host-my-secret");
      expect(env).not.toContain(hostSecrets.AWS_SECRET_ACCESS_KEY);
      expect(env).not.toContain(hostSecrets.GITHUB_TOKEN);
      const checked = await readFile(join(work, "check-env.txt"), "utf8");
      expect(checked).toContain("MY_SECRET=host-my-secret");
      expect(checked).toContain(`HOME=${homedir()}`);
      expect(checked).not.toContain(hostSecrets.AWS_SECRET_ACCESS_KEY);
      expect(checked).not.toContain(hostSecrets.GITHUB_TOKEN);
      const left = await processesUnder(work);
      expect(
        left,
        left
          .map((pid) => {
            try {
              return `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ")}`;
            } catch {
              return `${pid}: gone`;
            }
          })
          .join("\n"),
      ).toEqual([]);
    });
  }

  it("a 401 from opencode's provider fails the run after one attempt, naming the provider's error", async () => {
    const server = await serve(refused);
    const { plan, work } = await project();
    const t = captureIo();
    const args = runArgs(
      server.openaiBaseURL,
      plan,
      work,
      "--agent-model",
      `${compatibleProviderId}/agent`,
    );
    expect(await runCli(args, t.io)).toBe(exitCodes.notCompleted);
    const report = JSON.parse(t.out());
    expect(report.status).toBe("failed");
    expect(report.subTasks[0]).toMatchObject({ status: "failed", attempts: 1 });
    expect(report.subTasks[0].reason).toMatch(
      /refused its credentials \(status 401\).*Incorrect API key provided/,
    );
    // Nobody was asked to judge, retry or replan what a key cannot fix.
    expect(
      server.requests.every((request) => JSON.stringify(request.body).includes("Sub-task")),
    ).toBe(true);
  });

  it("Codex at --agent-base-url signs in with OPENAI_API_KEY; a 401 there fails the run at once", async () => {
    const server = await serve(refused);
    const { plan, work } = await project();
    // The CLI decides Codex's sign-in from its own environment: the host's, with the key.
    const t = captureIo({ env: { ...process.env, CI: "true" } });
    const args = runArgs(
      server.openaiBaseURL,
      plan,
      work,
      "--agent",
      "codex",
      "--agent-model",
      "test-model",
    );
    args.push("--agent-base-url", server.openaiBaseURL);
    expect(await runCli(args, t.io)).toBe(exitCodes.notCompleted);
    const report = JSON.parse(t.out());
    expect(report.status).toBe("failed");
    expect(report.subTasks[0]).toMatchObject({ status: "failed", attempts: 1 });
    expect(report.subTasks[0].reason).toMatch(
      /codex's model provider refused its credentials \(status 401\).*Incorrect API key provided/,
    );
    const agentCalls = server.requests.filter((request) => request.path.endsWith("/responses"));
    expect(agentCalls.length).toBeGreaterThan(0);
    for (const call of agentCalls) expect(call.headers.authorization).toBe("Bearer sk-refused");
  });
});
