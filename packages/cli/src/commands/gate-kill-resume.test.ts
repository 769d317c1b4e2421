import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunEvent } from "@taskledger/core";
import { createModelServer, type RecordedRequest } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createDemoReplies, demoRequest } from "../demo/demo-scenario.js";
import { builtCli, codexArgs, codexEnv } from "../test-support/cli-harness.js";
import { killResumeRun } from "../test-support/kill-resume.js";

type KillPoint = "gate-check" | "acceptance";

const nameOf = (request: RecordedRequest) =>
  (request.body as { response_format?: { json_schema?: { name?: string } } }).response_format
    ?.json_schema?.name;

/**
 * A run-wide check that marks each run seeing README.md (the docs' evaluation, then a gate on a
 * merge holding it) and, the second time only, sleeps a minute when told to: the manager is killed
 * during it.
 */
const probe = `const fs = require("node:fs");
if (fs.existsSync("README.md")) {
  const dir = process.argv[2];
  const n = fs.readdirSync(dir).length;
  fs.writeFileSync(dir + "/" + n + "-" + process.pid, process.cwd());
  if (n === 1 && process.argv[3] === "sleep") setTimeout(() => {}, 60000);
}
`;

async function killAndResume(point: KillPoint) {
  const run = await killResumeRun(`taskledger-gate-kill-${point}-`, codexEnv);
  const { root, cwd } = run;
  const markers = join(root, "markers");
  mkdirSync(markers);
  execFileSync("git", ["init", "-q"], { cwd });
  writeFileSync(join(cwd, "probe.js"), probe);
  writeFileSync(
    join(cwd, "taskledger.json"),
    JSON.stringify({
      checks: [
        {
          type: "command",
          argv: ["node", "probe.js", markers, point === "gate-check" ? "sleep" : "go"],
        },
      ],
    }),
  );
  const demo = createDemoReplies("codex");
  const server = await createModelServer({
    replies: (request) => {
      if (!run.killed && point === "acceptance" && nameOf(request) === "request_acceptance") {
        run.kill();
        return { hang: true };
      }
      return demo(request);
    },
  });
  // The gate's check has started (its marker is there) and sleeps: the manager dies now.
  const watching =
    point === "gate-check"
      ? setInterval(() => {
          if (readdirSync(markers).length >= 2) run.kill();
        }, 20)
      : undefined;
  try {
    const { report, before, after, leftover } = await run.killThenResume([
      demoRequest,
      "--yes",
      ...codexArgs(server.openaiBaseURL, "demo-agent", "demo-manager"),
      "--cwd",
      cwd,
      // The probe writes its markers outside the project, which the sandbox rightly refuses.
      "--sandbox",
      "off",
    ]);
    return { report, before, after, leftover, server };
  } finally {
    clearInterval(watching);
    await server.close();
    await run.dispose();
  }
}

const gateRuns = (records: readonly RunEvent[]) =>
  records.flatMap((r) => (r.type === "integration-checked" ? [r] : []));

describe.runIf(process.platform === "linux")(
  "kill -9 during the gate and the acceptance, then resume",
  () => {
    it.concurrent("gate-check: resumed with only --store, no passed gate runs again, the killed check is gone", async () => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const { report, before, after, leftover } = await killAndResume("gate-check");
      expect(report.status).toBe("completed");
      expect(after.slice(0, before.length)).toEqual(before);
      const passedBefore = new Set(
        gateRuns(before)
          .filter((r) => r.passed)
          .map((r) => r.tree),
      );
      const resumedRuns = gateRuns(after.slice(before.length));
      // A merge that is its attempt's own tree needs no run (its evaluation checked it): the run cut
      // short held another part's work too; it runs again, and none that had passed does.
      expect(resumedRuns.length).toBeGreaterThan(0);
      expect(resumedRuns[0]?.parts).toHaveLength(1);
      for (const run of resumedRuns) expect(passedBefore.has(run.tree)).toBe(false);
      for (const id of ["library", "tests", "docs"]) {
        expect(
          after.filter((r) => r.type === "sub-task-completed" && r.subTaskId === id),
        ).toHaveLength(1);
      }
      expect(report.integration?.final?.passed).toBe(true);
      expect(report.acceptance?.verdict).toBe("satisfied");
      // The check the killed manager started (it sleeps a minute) did not outlive it.
      expect(leftover).toEqual([]);
    }, 240_000);

    it.concurrent("acceptance: resumed with only --store, asks the judge once more and completes", async () => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const { report, before, after, leftover } = await killAndResume("acceptance");
      expect(report.status).toBe("completed");
      expect(before.some((r) => r.type === "acceptance-judged")).toBe(false);
      const resumedAt = before.length;
      // Nothing ran again: every sub-task was done and every gate passed before the kill.
      expect(after.slice(resumedAt).filter((r) => r.type === "sub-task-started")).toEqual([]);
      expect(gateRuns(after.slice(resumedAt))).toEqual([]);
      expect(after.filter((r) => r.type === "acceptance-judged")).toMatchObject([
        { round: 1, verdict: "satisfied" },
      ]);
      expect(report.workspace).toMatchObject({ applied: true });
      expect(leftover).toEqual([]);
    }, 240_000);
  },
);
