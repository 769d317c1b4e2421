import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InvalidConfigError } from "@taskledger/core";
import { tempDirectory } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runSandbox } from "../runtime/runtime.js";
import { parseRunOptions } from "./cli-options.js";
import { loadProjectConfig } from "./project-config.js";

const manager = { provider: "openai-compatible", model: "m", baseUrl: "http://127.0.0.1:1/v1" };

/** A project with `taskledger.json`, and a user's home (a temp directory) holding two apps' files. */
async function setUp(sandbox: unknown) {
  const root = tempDirectory("taskledger-sandbox-options-");
  const home = join(root, "home");
  for (const app of ["myapp", "otherapp"]) {
    mkdirSync(join(home, ".config", app), { recursive: true });
    writeFileSync(join(home, ".config", app, "settings"), `${app.toUpperCase()}-SETTINGS\n`);
  }
  const dir = join(root, "project");
  mkdirSync(join(dir, ".git"), { recursive: true });
  writeFileSync(join(dir, "taskledger.json"), JSON.stringify({ sandbox }));
  const loaded = await loadProjectConfig(dir, undefined);
  const options = await parseRunOptions(manager, dir, { path: loaded!.path, ...loaded!.config });
  return { home, dir, options };
}

describe("taskledger.json's sandbox.homeReads in the run's sandbox", () => {
  it("a path it widens is readable inside, the rest of the home is not", {
    timeout: 60_000,
  }, async () => {
    const { home, dir, options } = await setUp({ homeReads: ["~/.config/myapp"] });
    const sandbox = runSandbox(options, { HOME: home }, () => {});
    try {
      const status = await sandbox.status();
      if (!status.confined && !process.env.CI) return;
      const launch = await sandbox.wrap({
        file: "bash",
        args: [
          "-c",
          ["myapp", "otherapp"]
            .map((app) => `cat ${join(home, ".config", app, "settings")} || echo ${app}-hidden`)
            .join("; "),
        ],
        cwd: dir,
        env: { PATH: "/usr/bin:/bin", HOME: dir },
      });
      const child = spawn(launch.file, launch.args, { cwd: dir, env: launch.env });
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk;
      });
      await new Promise((resolve) => child.on("close", resolve));
      await launch.release();
      expect(stdout).toBe("MYAPP-SETTINGS\notherapp-hidden\n");
    } finally {
      await sandbox.close();
    }
  });

  it("a path at a credential store is refused before anything runs (exit 2)", async () => {
    const { home, options } = await setUp({ homeReads: ["~/.ssh"] });
    expect(() => runSandbox(options, { HOME: home }, () => {})).toThrow(InvalidConfigError);
    expect(() => runSandbox(options, { HOME: home }, () => {})).toThrow(
      /the home read ~\/\.ssh is at or beneath .*\.ssh/,
    );
  });
});
