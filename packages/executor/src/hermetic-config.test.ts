import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  buildRunConfig,
  buildRunEnv,
  createAttemptDirs,
  defaultPermission,
} from "./hermetic-config.js";

describe("hermetic config", () => {
  it("merges run defaults, the host's config and what the run needs, in that order", () => {
    const config = buildRunConfig({
      model: "acme/m1",
      agent: "build",
      hostConfig: {
        autoupdate: true,
        permission: { bash: "deny" },
        provider: { acme: { options: { baseURL: "http://127.0.0.1:1/v1", timeout: 1234 } } },
      },
      permission: { webfetch: "allow" },
      timeoutMs: 60_000,
      maxSteps: 7,
    });
    expect(config).toMatchObject({
      autoupdate: false,
      share: "disabled",
      agent: { build: { steps: 7 } },
      provider: {
        acme: {
          options: {
            baseURL: "http://127.0.0.1:1/v1",
            timeout: 1234,
            chunkTimeout: 65_000,
            headerTimeout: 65_000,
          },
        },
      },
    });
    const permission = config.permission as Record<string, string>;
    expect(permission).toMatchObject({ ...defaultPermission, bash: "deny", webfetch: "allow" });
    expect(Object.values(permission)).not.toContain("ask");
  });

  it("keeps the host's environment but nothing that points opencode elsewhere", async () => {
    const root = await mkdtemp(join(tmpdir(), "hermetic-"));
    try {
      const dirs = await createAttemptDirs(root, "1.18.33");
      const env = buildRunEnv({
        dirs,
        config: { autoupdate: false },
        inheritGlobalConfig: false,
        projectConfig: false,
        base: {
          PATH: "/bin",
          OPENCODE_CONFIG: "/home/me/oc.json",
          XDG_CONFIG_HOME: "/home/me/.config",
          TMPDIR: "/tmp",
          ANTHROPIC_API_KEY: "k",
        },
        // process.env's type: an unset entry is left out, never written as "undefined".
        extra: { EXTRA: "1", UNSET: undefined },
      });
      expect("UNSET" in env).toBe(false);
      expect(env).toMatchObject({
        PATH: "/bin",
        ANTHROPIC_API_KEY: "k",
        EXTRA: "1",
        XDG_CONFIG_HOME: dirs.config,
        XDG_DATA_HOME: dirs.data,
        TMPDIR: dirs.tmp,
        TMP: dirs.tmp,
        TEMP: dirs.tmp,
        OPENCODE_CONFIG_CONTENT: '{"autoupdate":false}',
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        OPENCODE_DISABLE_PROJECT_CONFIG: "1",
      });
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
      await rm(root, { recursive: true, force: true });
    }
  });
});
