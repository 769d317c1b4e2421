import { describe, expect, it } from "vitest";
import { buildRunConfig, defaultPermission } from "./opencode-config.js";

describe("the opencode config", () => {
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

  it("points the executor's provider at the agent's endpoint over the host's config", () => {
    const config = buildRunConfig({
      model: "acme/m1",
      agent: "build",
      hostConfig: { provider: { acme: { options: { baseURL: "http://127.0.0.1:1/v1" } } } },
      permission: undefined,
      timeoutMs: 60_000,
      maxSteps: 7,
      baseUrl: { provider: "acme", url: "http://127.0.0.1:2/v1" },
    });
    expect(config).toMatchObject({
      provider: { acme: { options: { baseURL: "http://127.0.0.1:2/v1" } } },
    });
  });
});
