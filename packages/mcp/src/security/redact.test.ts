import { describe, expect, it } from "vitest";
import { redact, secretsOf } from "./redact.js";

describe("redact", () => {
  it("hides the values of credential-named variables in every string of a result", () => {
    const secrets = secretsOf({
      ANTHROPIC_API_KEY: "sk-ant-123456789",
      GITHUB_TOKEN: "ghp_abcdefgh",
      HOME: "/home/someone",
      SHORT_KEY: "abc",
    });
    expect(secrets.sort()).toEqual(["ghp_abcdefgh", "sk-ant-123456789"]);
    const result = redact(
      {
        text: "key sk-ant-123456789!",
        list: [{ deep: "ghp_abcdefgh" }],
        n: 3,
        home: "/home/someone",
      },
      secrets,
    );
    expect(result).toEqual({
      text: "key [redacted]!",
      list: [{ deep: "[redacted]" }],
      n: 3,
      home: "/home/someone",
    });
  });
});
