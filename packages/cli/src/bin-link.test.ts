import { execFile } from "node:child_process";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..", "..");

it("is the workspace's own `taskledger` command after npm install (what npx runs)", async () => {
  const link = join(root, "node_modules", ".bin", "taskledger");
  expect(realpathSync(link)).toBe(join(root, "packages", "cli", "bin", "taskledger.js"));
  const { stdout } = await promisify(execFile)(link, ["--help"], { cwd: root });
  expect(stdout).toContain("Usage: taskledger");
  expect(stdout).toMatch(/resume/);
});
