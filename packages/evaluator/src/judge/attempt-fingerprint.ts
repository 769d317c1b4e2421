import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { resolve } from "node:path";
import type { AttemptResult } from "@taskledger/core";

/** What an attempt left behind, hashed: identical fingerprints mean no progress was made. */
export interface AttemptFingerprint {
  /** One hash over everything below. */
  id: string;
  outcome: AttemptResult["outcome"];
  /** Each file the attempt reports writing, by path: a hash of its content now, or `missing`. */
  files: Record<string, string>;
  finalTextHash: string;
  /** A hash over the tool calls' names, statuses and inputs, in order. */
  toolCallsHash: string;
}

const maxFiles = 200;

/**
 * Fingerprints an attempt: the files it changed and their content as they are now, its final
 * text and its tool calls. Outputs are left out because they carry timestamps and ids.
 */
export async function fingerprintAttempt(
  result: AttemptResult,
  cwd: string,
): Promise<AttemptFingerprint> {
  const files: Record<string, string> = {};
  const paths = [...new Set(result.filesChanged)].sort().slice(0, maxFiles);
  for (const path of paths) files[path] = await hashFile(resolve(cwd, path));
  const finalTextHash = sha256(result.finalText.trim());
  const tools = createHash("sha256");
  for (const call of result.toolCalls) {
    tools.update(`${call.tool}\u0000${call.status}\u0000${call.input}\u0001`);
  }
  const toolCallsHash = tools.digest("hex");
  const id = sha256(
    JSON.stringify([result.outcome, result.error ?? "", files, finalTextHash, toolCallsHash]),
  );
  return { id, outcome: result.outcome, files, finalTextHash, toolCallsHash };
}

/** True when `current` is the same as `previous`: the attempt changed nothing that shows. */
export function isStuck(
  previous: AttemptFingerprint | undefined,
  current: AttemptFingerprint,
): boolean {
  return previous !== undefined && previous.id === current.id;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

// Streamed, so a large file costs time but not memory.
function hashFile(path: string): Promise<string> {
  return new Promise((resolvePromise) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", () => resolvePromise("missing"))
      .on("end", () => resolvePromise(hash.digest("hex")));
  });
}
