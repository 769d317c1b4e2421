// The evaluator's digest of an attempt: its size must stay under the budget whatever the size of
// the transcript, and it must still hold the agent's final answer.
import { type AttemptResult, estimateTokens } from "@taskledger/core";
import { defaultDigestTokens, digestAttempt } from "@taskledger/evaluator";

export interface DigestRow {
  transcriptTokens: number;
  digestTokens: number;
  budget: number;
  keepsFinalAnswer: boolean;
  msPerDigest: number;
}

function attempt(tokens: number): AttemptResult {
  const chars = tokens * 4;
  const calls = Math.max(1, Math.floor(chars / 20_000));
  const perCall = Math.floor((chars * 0.8) / calls);
  return {
    outcome: "finished",
    finalText: `${"Working through the files. ".repeat(Math.floor((chars * 0.2) / 27))}FINAL-ANSWER: all tests pass.`,
    toolCalls: Array.from({ length: calls }, (_, i) => ({
      tool: i % 2 ? "bash" : "read",
      status: "completed",
      input: JSON.stringify({ command: `npm test -- --shard ${i}` }),
      output: "y".repeat(perCall),
    })),
    stepFinishReasons: [...Array.from({ length: calls }, () => "tool-calls"), "stop"],
    filesChanged: Array.from({ length: Math.min(calls, 500) }, (_, i) => `src/file-${i}.ts`),
    usage: { inputTokens: tokens, outputTokens: 1000, cacheReadTokens: 0, cacheWriteTokens: 0 },
    durationMs: 1000,
  };
}

export function benchDigest(sizes = [10_000, 100_000, 1_000_000]): DigestRow[] {
  return sizes.map((tokens) => {
    const result = attempt(tokens);
    const repeats = tokens >= 1_000_000 ? 5 : 20;
    let digest = "";
    const started = performance.now();
    for (let i = 0; i < repeats; i++) digest = digestAttempt(result);
    return {
      transcriptTokens: tokens,
      digestTokens: estimateTokens(digest),
      budget: defaultDigestTokens,
      keepsFinalAnswer: digest.includes("FINAL-ANSWER: all tests pass."),
      msPerDigest: (performance.now() - started) / repeats,
    };
  });
}
