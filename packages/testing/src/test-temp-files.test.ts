import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect, it } from "vitest";

const repository = resolve(import.meta.dirname, "../../..");

it("a test file's temporary directories are gone once its tests end", () => {
  const leftAt = join(mkdtempSync(join(tmpdir(), "left-at-")), "path");
  execFileSync(
    join(repository, "node_modules/.bin/vitest"),
    ["run", "--config", "test-support/fixtures/temp-files/vitest.config.ts"],
    { cwd: repository, env: { ...process.env, LEFT_AT: leftAt }, stdio: "pipe" },
  );
  const left = readFileSync(leftAt, "utf8");
  expect(left).toMatch(/taskledger-bare-/);
  expect(existsSync(left)).toBe(false);
});
