import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { scriptByRole } from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import { captureIo, codexArgs, testScratch, useCodexKey } from "../test-support/cli-harness.js";
import { completedJudge } from "../test-support/scripted-replies.js";

const plan = {
  subTasks: [
    {
      id: "one",
      title: "Write one.txt",
      description: "Write one.txt",
      successCriteria: ["one.txt exists"],
      dependsOn: [],
    },
  ],
};

/** A collector as small as can be: it keeps every OTLP/HTTP JSON body it is sent. */
async function fakeCollector(): Promise<{ server: Server; url: string; bodies: unknown[] }> {
  const bodies: unknown[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      let body = Buffer.concat(chunks);
      if (req.headers["content-encoding"] === "gzip") body = gunzipSync(body);
      bodies.push({
        path: req.url,
        type: req.headers["content-type"],
        body: JSON.parse(body.toString()),
      });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, bodies };
}

/** The planner plans `plan`, the judge says done, the agent answers at once. */
const replies = () =>
  scriptByRole({
    plan: { text: JSON.stringify(plan) },
    judge: completedJudge("ok", "ok"),
    agent: { text: "Done." },
  });

let collector: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => collector?.close(resolve) ?? resolve(undefined));
  collector = undefined;
});
const scratch = testScratch();
// The export of the run's spans is the subject, not the agent: its runs are on Codex.
useCodexKey();

describe("--otlp (real Codex, scripted provider, a local collector)", () => {
  it("exports the run's spans to the collector OTEL_EXPORTER_OTLP_ENDPOINT names (no --otlp), the key in none of them", async () => {
    const key = "sk-planted-otlp-key-0815";
    const model = await scratch.server({ replies: replies() });
    const sink = await fakeCollector();
    collector = sink.server;
    // OpenTelemetry's standard variable, as a collector's users already set it.
    const t = captureIo({
      env: { CI: "true", OPENAI_API_KEY: key, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url },
    });
    const code = await runCli(
      ["run", "Write one.txt", ...codexArgs(model.openaiBaseURL, "agent-x"), "--yes"],
      t.io,
    );
    expect(code, t.err()).toBe(0);
    expect(sink.bodies.length).toBeGreaterThan(0);
    const wire = JSON.stringify(sink.bodies);
    expect(wire).not.toContain(key);
    type Body = {
      path: string;
      body: { resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[] };
    };
    const names = (sink.bodies as Body[]).flatMap((b) =>
      b.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((x) => x.name))),
    );
    expect((sink.bodies as Body[]).every((b) => b.path === "/v1/traces")).toBe(true);
    expect(names).toEqual(
      expect.arrayContaining([
        "invoke_workflow taskledger",
        "planning",
        "invoke_agent one",
        "chat m",
      ]),
    );
    expect(wire).toContain('"service.name"');
  }, 120_000);

  it("a collector that is down costs the run nothing: it completes and exits 0", async () => {
    const model = await scratch.server({ replies: replies() });
    // A port that was just listening and is closed now: every export is refused.
    const gone = await fakeCollector();
    await new Promise((resolve) => gone.server.close(resolve));
    const t = captureIo();
    const code = await runCli(
      [
        "run",
        "Write one.txt",
        ...codexArgs(model.openaiBaseURL, "agent-x"),
        "--yes",
        "--otlp",
        gone.url,
      ],
      t.io,
    );
    expect(code, t.err()).toBe(0);
    expect(t.out()).toContain("Run completed");
    expect(t.err()).toMatch(
      /warning: could not send the spans to http:\/\/127\.0\.0\.1:\d+\/v1\/traces/,
    );
  }, 120_000);
});
