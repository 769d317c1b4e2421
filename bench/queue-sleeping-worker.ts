// One worker of the queue bench in a process of its own, as `taskledger worker` runs, with the
// bench's sleeping agent: `node bench/queue-sleeping-worker.ts REDIS QUEUE WORK_DIR ATTEMPT_MS`.
import { startAttemptWorker } from "@taskledger/queue";
import { sleepingExecutor } from "./queue-makespan.ts";

const [redis = "", queueName = "", workDir = "", attemptMs = "1000"] = process.argv.slice(2);
const worker = await startAttemptWorker({
  redis,
  queueName,
  workDir,
  executor: sleepingExecutor(Number(attemptMs), new Map()),
});
process.stdout.write("ready\n");
process.once("SIGINT", () => {
  void worker.close().then(() => process.exit(0));
});
