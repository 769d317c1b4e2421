import { createReadStream } from "node:fs";
import { resolve } from "node:path";
import { AbortedError } from "@taskledger/core";
import { UsageError } from "./cli-options.js";

/**
 * Longest request the CLI takes, in characters (core's default is 100,000): a specification read
 * from a file or stdin may be long, and only the planner sees it whole.
 */
export const maxRequestChars = 1_000_000;
// A character is at most 4 bytes of UTF-8, so more bytes than this is over the limit for sure.
const maxRequestBytes = 4 * maxRequestChars;

export interface RequestSource {
  request: string;
  /** True when stdin carried the request, so it cannot answer a prompt too. */
  fromStdin: boolean;
}

/**
 * The request of `run` and `plan`: the words given, `-` to read stdin, or `--request-file PATH`;
 * exactly one of them. Reading is bounded and stops with the command's signal.
 */
export async function readRequest(
  words: readonly string[],
  requestFile: string | undefined,
  io: { stdin: NodeJS.ReadableStream; cwd: string; signal: AbortSignal },
): Promise<RequestSource> {
  if (words.length > 0 && requestFile !== undefined) {
    throw new UsageError(
      "give the request either as words (or - for stdin) or as --request-file, not both",
    );
  }
  if (words.length === 0 && requestFile === undefined) {
    throw new UsageError(
      "no request: give it as words, as - to read it from stdin, or as --request-file PATH",
    );
  }
  const fromStdin = words.length === 1 && words[0] === "-";
  let request: string;
  let where: string;
  if (requestFile !== undefined) {
    const path = resolve(io.cwd, requestFile);
    where = `--request-file ${path}`;
    const file = createReadStream(path);
    try {
      request = await readBounded(file, where, io.signal);
    } catch (error) {
      if (error instanceof UsageError || AbortedError.isInstance(error)) throw error;
      throw new UsageError(`--request-file: cannot read ${path}: ${(error as Error).message}`);
    } finally {
      file.destroy();
    }
  } else if (fromStdin) {
    where = "stdin";
    request = await readBounded(io.stdin, where, io.signal);
  } else {
    where = "the command line";
    request = words.join(" ");
  }
  if (request.trim() === "") throw new UsageError(`the request is empty (${where})`);
  if (request.length > maxRequestChars) throw tooLong(where);
  return { request, fromStdin };
}

/** Reads a stream to its end as UTF-8, refusing more than `maxRequestBytes`. */
function readBounded(
  stream: NodeJS.ReadableStream,
  where: string,
  signal: AbortSignal,
): Promise<string> {
  return new Promise((done, fail) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const finish = (error: unknown, text?: string) => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      signal.removeEventListener("abort", onAbort);
      // What is left unread stays in the stream; the command ends here.
      stream.pause();
      if (error === undefined) done(text ?? "");
      else fail(error);
    };
    const onData = (chunk: Buffer | string) => {
      const buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      bytes += buffer.length;
      if (bytes > maxRequestBytes) finish(tooLong(where));
      else chunks.push(buffer);
    };
    const onEnd = () => finish(undefined, Buffer.concat(chunks).toString("utf8"));
    const onError = (error: Error) => finish(error);
    const onAbort = () =>
      finish(
        new AbortedError(`Reading the request (${where}) was cancelled.`, { cause: signal.reason }),
      );
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.resume();
  });
}

function tooLong(where: string): UsageError {
  return new UsageError(
    `the request (${where}) is too long: the limit is ${maxRequestChars} characters`,
  );
}
