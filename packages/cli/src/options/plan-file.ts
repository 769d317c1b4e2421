import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { clipMiddle } from "@taskledger/core";
import { UsageError } from "./cli-options.js";

// A Task Ledger holds at most 100 sub-tasks of bounded text: more than this is not one.
const maxPlanBytes = 4_000_000;

/**
 * The Task Ledger in `path` (what `taskledger plan --json` prints, maybe edited), parsed but not
 * validated: the run validates it as it does a generated one, with the same errors.
 */
export async function readPlanFile(path: string, cwd: string): Promise<unknown> {
  const file = resolve(cwd, path);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new UsageError(`--plan: cannot read ${file}: ${(error as Error).message}`);
  }
  if (Buffer.byteLength(text) > maxPlanBytes)
    throw new UsageError(`--plan: ${file} is larger than ${maxPlanBytes} bytes`);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--plan: ${file} is not JSON: ${(error as Error).message}`);
  }
}

/** The request a plan given without one stands for: its sub-tasks' titles. */
export function requestOfPlan(plan: unknown): string {
  const subTasks = (plan as { subTasks?: unknown } | null)?.subTasks;
  const titles = Array.isArray(subTasks)
    ? subTasks.map((s) => (s as { title?: unknown })?.title).filter((t) => typeof t === "string")
    : [];
  return clipMiddle(`Carry out this plan: ${titles.join("; ") || "(untitled)"}.`, 4000);
}
