// A library host for host-death.test.ts, on the built executor. Run with
// `node attempt-host.ts <cwd> [run|run-server|finish|idle-server]`, the opencode provider config as
// JSON in TASKLEDGER_TEST_PROVIDER. `run`: one attempt, each process it starts printed as a JSON
// line, until the host is killed (`run-server`: the same on the server executor). `finish`: one attempt to its end and one aborted as soon as it starts,
// then `{"done":true}`, and the host stays up until it is killed. `idle-server`: one attempt on the
// server executor to its end, then `{"done":true,…}` with the server's pid, the server left idle
// and the host up until it is killed. `no-close`: the same attempt on the server executor, then
// `{"done":true,…}` and nothing more: the host is left to exit when nothing holds it (no close()).
import type { ExecuteOptions } from "@taskledger/core";
import { createOpencodeExecutor, createOpencodeServerExecutor } from "@taskledger/executor";

const [cwd, mode = "run"] = process.argv.slice(2) as [string, string?];
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
const settings = {
  model: "scripted/test-model",
  config: { provider: JSON.parse(process.env.TASKLEDGER_TEST_PROVIDER ?? "{}") },
  timeoutMs: 600_000,
};
const executor =
  mode === "idle-server" || mode === "run-server" || mode === "no-close"
    ? createOpencodeServerExecutor(settings)
    : createOpencodeExecutor(settings);
const options: ExecuteOptions = {
  subTask: {
    id: "s1",
    title: "s1",
    description: "s1",
    successCriteria: ["done"],
    dependsOn: [],
    checks: [],
  },
  attempt: 1,
  cwd,
  abortSignal: new AbortController().signal,
  onProcess: print,
};
if (mode === "run" || mode === "run-server") await executor.run("Wait", options);
else if (mode === "no-close") {
  const finished = await executor.run("Say done", { ...options, onProcess: () => {} });
  print({ done: true, outcome: finished.outcome, serverPid: finished.details?.pid });
} else if (mode === "idle-server") {
  const finished = await executor.run("Say done", { ...options, onProcess: () => {} });
  print({ done: true, outcome: finished.outcome, serverPid: finished.details?.pid });
  setInterval(() => {}, 60_000);
} else {
  const finished = await executor.run("Say done", options);
  const controller = new AbortController();
  const aborted = await executor.run("Wait", {
    ...options,
    attempt: 2,
    abortSignal: controller.signal,
    onProcess: () => controller.abort(),
  });
  print({ done: true, outcomes: [finished.outcome, aborted.outcome] });
  setInterval(() => {}, 60_000);
}
