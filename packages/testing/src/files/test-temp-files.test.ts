import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { expect, it } from "vitest";
import { commandLineOf, pollUntil, processesUnder } from "../processes/processes-under.js";

const repository = resolve(import.meta.dirname, "../../../..");
const vitest = join(repository, "node_modules/.bin/vitest");
const config = ["--config", "test-support/fixtures/temp-files/vitest.config.ts"];

/** The test file's own directory (`taskledger-test-*`) of a directory one of its tests made. */
const rootOf = (made: string) => dirname(dirname(made));

it("a test file's temporary directories are gone once its tests end", () => {
  const output = execFileSync(vitest, ["run", ...config, "leaves-temp-files"], {
    cwd: repository,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const left = /left: (\S+)/.exec(output)?.[1];
  expect(left, output).toMatch(/taskledger-bare-/);
  expect(existsSync(left!)).toBe(false);
  expect(rootOf(left!)).toMatch(/taskledger-test-/);
  expect(existsSync(rootOf(left!))).toBe(false);
});

it.each(["SIGINT", "SIGTERM"] as const)(
  "and when the run is stopped (%s) while a test runs, by the next test file to start",
  async (signal) => {
    const run = spawn(vitest, ["run", ...config, "hangs-with-temp-files"], {
      cwd: repository,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const ended = once(run, "exit");
    let output = "";
    const left = await new Promise<string>((found) => {
      run.stdout.on("data", (chunk) => {
        output += chunk;
        const path = /left: (\S+)/.exec(output)?.[1];
        if (path) found(path);
      });
    });
    expect(existsSync(left)).toBe(true);
    run.kill(signal);
    await ended;
    // Its worker ends after vitest (killed by vitest's watchdog, it cannot remove anything).
    const workers = await pollUntil(
      () => processesUnder(rootOf(left)),
      (pids) => pids.length === 0,
    );
    expect(workers.map(commandLineOf)).toEqual([]);
    execFileSync(vitest, ["run", ...config, "leaves-temp-files"], {
      cwd: repository,
      stdio: ["ignore", "pipe", "pipe"],
    });
    expect(existsSync(rootOf(left)), output).toBe(false);
  },
  60_000,
);
