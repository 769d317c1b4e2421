// One measurement in its own process, so its peak RSS is its own: `node event-parser-worker.ts
// <parser|baseline> <megabytes>`. Prints one JSON line.
import { parseOpencodeEvents, Transcript } from "@taskledger/executor";

const [mode = "parser", megabytes = "10"] = process.argv.slice(2);
const totalBytes = Number(megabytes) * 1024 * 1024;

/** One cycle of opencode-shaped JSON lines, with a tool output of 2 MB like a page snapshot. */
function cycle(): Buffer {
  const lines: string[] = [];
  for (let i = 0; i < 50; i++) {
    const size = i === 49 ? 2 * 1024 * 1024 : i % 5 === 0 ? 64 * 1024 : 200;
    lines.push(
      JSON.stringify({ type: "step_start", part: { type: "step-start" } }),
      JSON.stringify({ type: "text", part: { type: "text", text: `Looking at step ${i}.` } }),
      JSON.stringify({
        type: "tool_use",
        part: {
          tool: "bash",
          state: {
            status: "completed",
            input: { command: `cat page-${i}.html` },
            output: "x".repeat(size),
          },
        },
      }),
      JSON.stringify({
        type: "step_finish",
        part: {
          reason: "tool-calls",
          tokens: { input: 1000, output: 20, reasoning: 0, cache: { read: 0, write: 0 } },
          cost: 0,
        },
      }),
    );
  }
  return Buffer.from(`${lines.join("\n")}\n`);
}

// The cycle is built once and replayed, so the source costs neither memory nor time per byte.
async function* stream(): AsyncGenerator<Buffer> {
  const source = cycle();
  for (let produced = 0; produced < totalBytes; produced += source.length) {
    // Pipe-sized pieces, as a child's stdout delivers them.
    for (let offset = 0; offset < source.length; offset += 65_536)
      yield source.subarray(offset, offset + 65_536);
  }
}

/** What a naive reader does: split on newlines, JSON.parse every line. */
async function baseline(): Promise<number> {
  let rest = "";
  let events = 0;
  for await (const chunk of stream()) {
    const lines = (rest + chunk.toString("utf8")).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) {
      if (!line) continue;
      JSON.parse(line);
      events++;
    }
  }
  return events;
}

async function parser(): Promise<number> {
  const transcript = new Transcript(process.cwd());
  let events = 0;
  for await (const event of parseOpencodeEvents(stream())) {
    transcript.add(event);
    events++;
  }
  return events;
}

const started = performance.now();
const events = mode === "baseline" ? await baseline() : await parser();
const seconds = (performance.now() - started) / 1000;
console.log(
  JSON.stringify({
    mode,
    megabytes: Number(megabytes),
    events,
    mbPerSecond: Number(megabytes) / seconds,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  }),
);
