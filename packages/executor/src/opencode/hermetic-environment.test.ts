import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createAttemptDirs } from "./attempt-dirs.js";
import { hermeticEnvironment } from "./hermetic-environment.js";

describe("the hermetic environment", () => {
  it("gives opencode its list of the host's environment, nothing that points it elsewhere", async () => {
    const root = await mkdtemp(join(tmpdir(), "hermetic-"));
    const host = {
      OPENCODE_CONFIG: "/home/me/oc.json",
      XDG_CONFIG_HOME: "/home/me/.config",
      ANTHROPIC_API_KEY: "k",
      OPENAI_API_KEY: "not-this-run's",
      MY_SECRET: "s",
    };
    const saved = Object.fromEntries(Object.keys(host).map((key) => [key, process.env[key]]));
    Object.assign(process.env, host);
    try {
      const dirs = await createAttemptDirs(root, "1.18.33");
      const env = hermeticEnvironment(
        {
          model: "anthropic/claude",
          config: { autoupdate: false },
          projectConfig: false,
          // process.env's type: an unset entry is left out, never written as "undefined".
          env: { EXTRA: "1", UNSET: undefined },
        },
        { agent: "build", timeoutMs: 60_000, maxSteps: 5 },
        "anthropic/claude",
        dirs,
      );
      expect("UNSET" in env).toBe(false);
      expect(env).toMatchObject({
        PATH: process.env.PATH,
        ANTHROPIC_API_KEY: "k",
        EXTRA: "1",
        HOME: dirs.home,
        XDG_CONFIG_HOME: dirs.config,
        XDG_DATA_HOME: dirs.data,
        TMPDIR: dirs.tmp,
        TMP: dirs.tmp,
        TEMP: dirs.tmp,
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        OPENCODE_DISABLE_PROJECT_CONFIG: "1",
      });
      expect(JSON.parse(env.OPENCODE_CONFIG_CONTENT ?? "")).toMatchObject({ autoupdate: false });
      // Another provider's key and an unrelated secret stay on the host.
      expect(env.OPENAI_API_KEY).toBeUndefined();
      expect(env.MY_SECRET).toBeUndefined();
      expect(env.OPENCODE_CONFIG).toBeUndefined();
      // The seeded config directory: opencode finds its plugin package "installed".
      const configDir = join(dirs.config, "opencode");
      expect((await readdir(configDir)).sort()).toEqual([
        "node_modules",
        "package-lock.json",
        "package.json",
      ]);
      const lock = JSON.parse(await readFile(join(configDir, "package-lock.json"), "utf8"));
      expect(lock.packages[""].dependencies).toEqual({ "@opencode-ai/plugin": "1.18.33" });
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      await rm(root, { recursive: true, force: true });
    }
  });
});
