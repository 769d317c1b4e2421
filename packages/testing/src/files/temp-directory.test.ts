import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const helper = pathToFileURL(join(import.meta.dirname, "temp-directory.ts")).href;

/**
 * A process that makes a temp directory with a file in it, prints its path, then does `then`;
 * resolves with the path and how the process ended, after `signal` was sent once it printed.
 */
async function child(then: string, signal?: NodeJS.Signals) {
  const script = `
    import { writeFileSync } from "node:fs";
    import { join } from "node:path";
    import { tempDirectory } from ${JSON.stringify(helper)};
    const dir = tempDirectory("taskledger-temp-directory-");
    writeFileSync(join(dir, "built"), "x");
    console.log(dir);
    ${then}
  `;
  const process_ = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const ended = once(process_, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  const [line] = (await once(process_.stdout, "data")) as [Buffer];
  const dir = line.toString().trim();
  if (signal) {
    // Still running: its directory is there until the signal.
    expect(existsSync(join(dir, "built"))).toBe(true);
    process_.kill(signal);
  }
  const [code, endSignal] = await ended;
  return { dir, code, signal: endSignal };
}

describe("tempDirectory: gone when the process ends, however it ends", () => {
  it("ends normally", async () => {
    const ended = await child("");
    expect(ended).toMatchObject({ code: 0, signal: null });
    expect(existsSync(ended.dir)).toBe(false);
  });

  it("fails with an uncaught error", async () => {
    const ended = await child(`throw new Error("the bench failed");`);
    expect(ended.code).toBe(1);
    expect(existsSync(ended.dir)).toBe(false);
  });

  it.each(["SIGINT", "SIGTERM", "SIGHUP"] as const)(
    "is stopped by %s, and still ends by it",
    async (signal) => {
      const ended = await child("setInterval(() => {}, 1000);", signal);
      expect(ended).toMatchObject({ code: null, signal });
      expect(existsSync(ended.dir)).toBe(false);
    },
  );

  it("leaves a signal to the process's own handler", async () => {
    const ended = await child(
      `process.on("SIGINT", () => process.exit(7)); setInterval(() => {}, 1000);`,
      "SIGINT",
    );
    expect(ended).toMatchObject({ code: 7, signal: null });
    expect(existsSync(ended.dir)).toBe(false);
  });
});
