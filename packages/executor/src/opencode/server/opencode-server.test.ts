import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startTimeOf } from "@taskledger/process";
import { afterAll, describe, expect, it } from "vitest";
import { executorHarness } from "../../test-support/executor-harness.js";

const { scriptedServer, workDir, executorFor, runOptions, cleanup } = executorHarness();
afterAll(cleanup);

/** An executable standing in for opencode: a shell script that counts its starts in `starts`. */
async function fakeOpencode(
  body: (dir: string) => string,
): Promise<{ path: string; dir: string; starts: () => Promise<number> }> {
  const dir = await workDir();
  const path = join(dir, "opencode");
  const starts = join(dir, "starts");
  await writeFile(path, `#!/bin/sh\necho start >> "${starts}"\n${body(dir)}\n`);
  await chmod(path, 0o755);
  return {
    path,
    dir,
    starts: async () =>
      (await readFile(starts, "utf8").catch(() => "")).split("\n").filter(Boolean).length,
  };
}

describe("the server executor when a server cannot start", () => {
  it("a port taken before opencode bound it (its ServeError) is tried on two more ports, then a retryable error saying so", async () => {
    const fake = await fakeOpencode(
      () => `printf 'Error: Unexpected error\\n\\nServeError\\n' >&2\nexit 1`,
    );
    const executor = executorFor(await scriptedServer([]), { binaryPath: fake.path }, "server");
    const result = await executor.run("Hi", runOptions(await workDir()));
    expect(result.outcome).toBe("error");
    expect(result.retryable).toBeUndefined();
    expect(result.error).toBe("opencode exited with code 1: Unexpected error ServeError");
    expect(await fake.starts()).toBe(3);
  });

  it("a server that never says it listens is killed after serverStartTimeoutMs: a retryable error, no process left", async () => {
    const fake = await fakeOpencode((dir) => `echo $$ > "${dir}/pid"\nexec sleep 300`);
    const executor = executorFor(
      await scriptedServer([]),
      { binaryPath: fake.path, serverStartTimeoutMs: 1000 },
      "server",
    );
    const result = await executor.run("Hi", runOptions(await workDir()));
    expect(result).toMatchObject({
      outcome: "error",
      error: "the opencode server did not start in 1000 ms",
    });
    expect(result.retryable).toBeUndefined();
    expect(await fake.starts()).toBe(1);
    const pid = Number(await readFile(join(fake.dir, "pid"), "utf8"));
    expect(startTimeOf(pid)).toBeUndefined();
  });
});
