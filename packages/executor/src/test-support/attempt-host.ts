// A library host for host-death.test.ts: runs one attempt on the built executor and prints each
// process it starts as a JSON line, until it is killed. Run with `node attempt-host.ts <cwd>`, the
// opencode provider config as JSON in TASKLEDGER_TEST_PROVIDER.
import { createOpencodeExecutor } from "@taskledger/executor";

const cwd = process.argv[2] as string;
const executor = createOpencodeExecutor({
  model: "scripted/test-model",
  config: { provider: JSON.parse(process.env.TASKLEDGER_TEST_PROVIDER ?? "{}") },
  timeoutMs: 600_000,
});
await executor.run("Wait", {
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
  onProcess: (started) => process.stdout.write(`${JSON.stringify(started)}\n`),
});
