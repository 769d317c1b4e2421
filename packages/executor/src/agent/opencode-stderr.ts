import { stripControl } from "@taskledger/core";
import { clip } from "../events/clip.js";

/** The most of opencode's own error message an attempt's error carries. */
export const maxOpencodeMessageChars = 2000;

/**
 * What opencode said when it gave up before running (its `Error: …` block on stderr), as one
 * line: control characters stripped, the config text it quotes back left out (it may hold keys),
 * bounded. Undefined when stderr has no such block.
 */
export function opencodeErrorMessage(stderr: string): string | undefined {
  const lines = stripControl(stderr).split("\n");
  const start = lines.findIndex((line) => line.startsWith("Error: "));
  if (start < 0) return undefined;
  const kept: string[] = [];
  let quoting = false;
  for (const line of lines.slice(start)) {
    const trimmed = line.trim();
    if (trimmed === "--- JSONC Input ---") quoting = true;
    else if (trimmed === "--- Errors ---") quoting = false;
    else if (!quoting && trimmed !== "" && !isQuotedSource(trimmed)) kept.push(trimmed);
  }
  const message = kept.join(" ").replace(/^Error: /, "");
  return message === "" ? undefined : clip(message, maxOpencodeMessageChars);
}

/** opencode refused its config: every attempt with the same config ends the same. */
export function isConfigRejection(message: string): boolean {
  return /^(Configuration is invalid|Config file at .* is (not valid JSON|invalid)|Directory ".*" in .* is not valid)/.test(
    message,
  );
}

/** A line of a JSON parse report that quotes the config (`Line 1: {…}`, a caret, the end mark). */
function isQuotedSource(line: string): boolean {
  return /^Line \d+:/.test(line) || /^\^+$/.test(line) || line === "--- End ---";
}
