import { stripControl } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import {
  isConfigRejection,
  maxOpencodeMessageChars,
  opencodeErrorMessage,
} from "./opencode-stderr.js";

// What opencode 1.18.33 wrote to stderr, byte for byte, for a config it refused.
const invalid =
  '\u001b[91m\u001b[1mError: \u001b[0mConfiguration is invalid at OPENCODE_CONFIG_CONTENT\n↳ Expected LogLevel, got "LOUD" logLevel\n';
const notJson =
  '\u001b[91m\u001b[1mError: \u001b[0mConfig file at /home/me/oc.json is not valid JSON(C): \n--- JSONC Input ---\n{"apiKey": "sk-secret",\n--- Errors ---\nValueExpected at line 2, column 1\n   Line 1: {"apiKey": "sk-secret",\n              ^\nCloseBraceExpected at line 2, column 1\n--- End ---\n';

describe("opencode's own error message", () => {
  it("is its Error block on one line, without colour codes", () => {
    const message = opencodeErrorMessage(invalid);
    expect(message).toBe(
      'Configuration is invalid at OPENCODE_CONFIG_CONTENT ↳ Expected LogLevel, got "LOUD" logLevel',
    );
    expect(isConfigRejection(message as string)).toBe(true);
  });

  it("leaves out the config text a JSON error quotes back, which may hold a key", () => {
    const message = opencodeErrorMessage(notJson) as string;
    expect(message).toBe(
      "Config file at /home/me/oc.json is not valid JSON(C): ValueExpected at line 2, column 1 CloseBraceExpected at line 2, column 1",
    );
    expect(message).not.toContain("sk-secret");
    expect(isConfigRejection(message)).toBe(true);
  });

  it("strips escape sequences and control characters an error could carry", () => {
    const hostile =
      "log line before\nError: bad \u001b]0;title\u0007thing\u001b[2J\u001b[H\r\u0000\u0007 here\u009b\n";
    expect(opencodeErrorMessage(hostile)).toBe("bad thing here");
    expect(stripControl("a\u001b[31mb\u001bc\td\ne")).toBe("ab\td\ne");
  });

  it("is bounded", () => {
    const message = opencodeErrorMessage(`Error: ${"x".repeat(100_000)}`) as string;
    expect(message.length).toBeLessThanOrEqual(maxOpencodeMessageChars);
    expect(message).toContain("characters cut");
  });

  it("is undefined when stderr has no Error block, and a model error is not a config rejection", () => {
    expect(opencodeErrorMessage("")).toBeUndefined();
    expect(opencodeErrorMessage("some warning\n")).toBeUndefined();
    expect(isConfigRejection("Model not found: scripted/x")).toBe(false);
  });
});
