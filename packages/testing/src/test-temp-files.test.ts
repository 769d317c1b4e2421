import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { expect, it } from "vitest";

const repository = resolve(import.meta.dirname, "../../..");

it("a test file's temporary directories are gone once its tests end", () => {
  const output = execFileSync(
    join(repository, "node_modules/.bin/vitest"),
    ["run", "--config", "test-support/fixtures/temp-files/vitest.config.ts"],
    { cwd: repository, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
  const left = /left: (\S+)/.exec(output)?.[1];
  expect(left, output).toMatch(/taskledger-bare-/);
  expect(existsSync(left!)).toBe(false);
});
