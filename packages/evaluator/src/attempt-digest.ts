import {
  type AttemptResult,
  estimateTokens,
  InvalidConfigError,
  type ToolCallRecord,
  truncateToTokens,
} from "@taskledger/core";
import { clipMiddle, clipStart, oneLine } from "./clip.js";

export interface DigestOptions {
  /** Tokens the digest may take (estimated as core does). Default 3,000; at least 200. */
  maxTokens?: number;
}

export const defaultDigestTokens = 3000;
const charsPerToken = 4;
const maxInputChars = 300;
const maxOutputChars = 700;
const minCallChars = 160;

/**
 * A bounded account of one attempt for the judge: how it ended, the files it wrote, its latest
 * tool calls with trimmed inputs and outputs, and the end of its final text. Never the raw
 * transcript; whatever the attempt's size the digest stays within `maxTokens`, and the parts
 * that decide a verdict (the ending, the final answer, the newest tool calls) go in first.
 */
export function digestAttempt(result: AttemptResult, options: DigestOptions = {}): string {
  const maxTokens = options.maxTokens ?? defaultDigestTokens;
  if (!Number.isFinite(maxTokens) || maxTokens < 200) {
    throw new InvalidConfigError(`The digest's maxTokens must be at least 200, not ${maxTokens}`);
  }
  const budget = maxTokens * charsPerToken;

  const ending = clipMiddle(describeEnding(result), Math.floor(budget * 0.12));
  const files = describeFiles(result.filesChanged, Math.floor(budget * 0.1));
  const finalText = result.finalText.trim();
  const finalSection = `## Final text (the agent's own account, not proof)\n${
    finalText ? clipMiddle(finalText, Math.floor(budget * 0.35), 0.2) : "(none)"
  }`;
  const fixed = [ending, files, finalSection].join("\n\n").length;
  const calls = describeToolCalls(result.toolCalls, budget - fixed - 8);

  const digest = [ending, files, calls, finalSection].filter(Boolean).join("\n\n");
  // A safety net only: the sections above are sized to fit.
  return estimateTokens(digest) <= maxTokens ? digest : truncateToTokens(digest, maxTokens);
}

function describeEnding(result: AttemptResult): string {
  const steps = result.stepFinishReasons;
  const lines = [
    "## How the attempt ended",
    `outcome: ${result.outcome}`,
    `steps: ${steps.length}${steps.length ? ` (last: ${steps.slice(-5).join(", ")})` : ""}`,
    `duration: ${(result.durationMs / 1000).toFixed(1)} s; tokens: ${result.usage.inputTokens} in, ${result.usage.outputTokens} out`,
  ];
  if (result.error) lines.push(`error: ${clipMiddle(result.error, 600)}`);
  return lines.join("\n");
}

function describeFiles(files: readonly string[], maxChars: number): string {
  if (files.length === 0) return "## Files written\n(none reported)";
  const header = `## Files written (${files.length})`;
  const lines: string[] = [];
  let used = header.length;
  for (const file of files) {
    const line = `- ${oneLine(file, 200)}`;
    if (used + line.length + 1 > maxChars - 40) break;
    lines.push(line);
    used += line.length + 1;
  }
  if (lines.length < files.length) lines.push(`- … and ${files.length - lines.length} more`);
  return [header, ...lines].join("\n");
}

/** The newest calls that fit, oldest first, and a count by tool of those left out. */
function describeToolCalls(calls: readonly ToolCallRecord[], maxChars: number): string {
  if (calls.length === 0) return "## Tool calls\n(none)";
  const reserve = 300; // header plus the line naming the calls left out
  let room = maxChars - reserve;
  const shown: string[] = [];
  let index = calls.length - 1;
  for (; index >= 0 && room >= minCallChars; index--) {
    const call = calls[index]!;
    let text = describeCall(call, index + 1, maxInputChars, maxOutputChars);
    if (text.length > room) text = describeCall(call, index + 1, 80, Math.max(40, room - 200));
    if (text.length > room) break;
    shown.unshift(text);
    room -= text.length + 1;
  }
  const omitted = calls.slice(0, index + 1);
  const header = `## Tool calls (${calls.length}; ${shown.length === calls.length ? "all" : `the last ${shown.length}`} shown)`;
  const lines = [header];
  if (omitted.length > 0) lines.push(`Earlier, not shown: ${countByTool(omitted)}`);
  return [...lines, ...shown].join("\n");
}

function describeCall(call: ToolCallRecord, n: number, inputChars: number, outputChars: number) {
  const input = oneLine(call.input, inputChars);
  const output = call.output.trim() ? clipStart(call.output.trim(), outputChars) : "(no output)";
  return `[${n}] ${oneLine(call.tool, 60)} (${oneLine(call.status, 30)}) ${input}\n${indent(output)}`;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
}

function countByTool(calls: readonly ToolCallRecord[]): string {
  const counts = new Map<string, number>();
  for (const call of calls) {
    const tool = oneLine(call.tool, 40);
    counts.set(tool, (counts.get(tool) ?? 0) + 1);
  }
  const sorted = [...counts].sort((a, b) => b[1] - a[1]);
  const top = sorted.slice(0, 8).map(([tool, count]) => `${tool} ×${count}`);
  if (sorted.length > 8) top.push(`${sorted.length - 8} other tools`);
  return `${calls.length} call(s): ${top.join(", ")}`;
}
