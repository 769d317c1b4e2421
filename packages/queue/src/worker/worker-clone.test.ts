import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gitIn } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import type { AttemptJobData } from "../job/attempt-job.js";
import { repositoryWithRemote, subTask } from "../test-support/queue-fixtures.js";
import { WorkerClones } from "./worker-clone.js";

describe("WorkerClones", () => {
  // A fetch's connectivity check reads every worktree's HEAD, and a worktree being added holds a
  // placeholder there: run side by side, a fetch failed with "bad object worktrees/…/HEAD".
  it("checks out attempts side by side while others fetch their starts, every one at its start", async () => {
    const { repo, remote } = repositoryWithRemote("taskledger-worker-clone-");
    const starts: string[] = [];
    for (let i = 0; i < 24; i++) {
      gitIn(repo, "commit", "-q", "--allow-empty", "-m", `start ${i}`);
      const commit = gitIn(repo, "rev-parse", "HEAD");
      gitIn(repo, "push", "-q", remote, `${commit}:refs/starts/${i}`);
      starts.push(commit);
    }
    const clones = new WorkerClones(mkdtempSync(join(tmpdir(), "taskledger-worker-clone-work-")));
    const job = (i: number): AttemptJobData => ({
      runId: "run",
      subTask: subTask(`s${i}`),
      attempt: 1,
      prompt: "",
      remote,
      start: starts[i]!,
      startRef: `refs/starts/${i}`,
      workRef: `refs/work/${i}`,
      prefix: "",
    });
    const signal = new AbortController().signal;
    // Three waves of eight: the race showed in about one wave of three.
    for (let wave = 0; wave < 3; wave++) {
      const ids = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => wave * 8 + i);
      const slots = await Promise.all(
        ids.map((i) => clones.checkout(job(i), `run.s${i}.1`, signal)),
      );
      expect(slots.map((slot) => gitIn(slot.path, "rev-parse", "HEAD"))).toEqual(
        ids.map((i) => starts[i]),
      );
    }
  }, 60_000);
});
