import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { isTrivialRequest } from "./trivial-request.js";

const { requests } = JSON.parse(
  readFileSync(join(import.meta.dirname, "fixtures", "requests.json"), "utf8"),
) as { requests: { request: string; oneStep: boolean }[] };

it("never skips planning for a request that is not one step, on a labelled list", () => {
  expect(requests.length).toBeGreaterThanOrEqual(50);
  const skippedBigJobs = requests.filter((r) => !r.oneStep && isTrivialRequest(r.request));
  const plannedOneSteps = requests.filter((r) => r.oneStep && !isTrivialRequest(r.request));
  const oneSteps = requests.filter((r) => r.oneStep).length;
  // The misses, for whoever tunes the heuristic: a planned one-step request costs one call.
  console.log(
    `isTrivialRequest on ${requests.length} labelled requests: ${skippedBigJobs.length} big jobs run unplanned, ` +
      `${plannedOneSteps.length} of ${oneSteps} one-step requests sent to the planner` +
      plannedOneSteps.map((r) => `\n  planned: ${r.request}`).join(""),
  );
  expect(skippedBigJobs.map((r) => r.request)).toEqual([]);
  // Still a bypass: most plainly one-step requests skip the planning call.
  expect(plannedOneSteps.length).toBeLessThanOrEqual(oneSteps / 3);
});

it("is false for an empty or long request", () => {
  expect(isTrivialRequest("   ")).toBe(false);
  expect(isTrivialRequest(`Fix the typo in ${"a".repeat(120)}.md`)).toBe(false);
});
