// A library host for check-host-death.test.ts, on the built packages. Run with
// `node check-host.ts <cwd>`: evaluates a finished attempt whose sub-task declares a check that
// runs for five minutes (it writes its pid to pid.txt first), guarded by an opencode executor,
// until the host is killed.
import { createEvaluator } from "@taskledger/evaluator";
import { createOpencodeExecutor } from "@taskledger/executor";

const [cwd] = process.argv.slice(2) as [string];
const executor = createOpencodeExecutor({ model: "scripted/test-model" });
await createEvaluator().evaluate(
  {
    runId: "r",
    request: "Wait",
    subTask: {
      id: "s1",
      title: "s1",
      description: "s1",
      successCriteria: ["done"],
      dependsOn: [],
      checks: [
        {
          type: "command",
          argv: ["sh", "-c", "echo $$ > pid.txt; exec sleep 300"],
          timeoutMs: null,
        },
      ],
    },
    attempt: 1,
    result: {
      outcome: "finished",
      finalText: "done",
      toolCalls: [],
      stepFinishReasons: ["stop"],
      filesChanged: [],
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
      durationMs: 1,
    },
    cwd,
  },
  { abortSignal: new AbortController().signal, guardProcess: (p) => executor.guard(p) },
);
