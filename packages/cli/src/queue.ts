// `taskledger/queue`: attempts as jobs on Redis, and the worker that runs them.
export {
  type AttemptWorker,
  type AttemptWorkerOptions,
  createQueueExecutor,
  type QueueExecutor,
  type QueueExecutorOptions,
  startAttemptWorker,
} from "@taskledger/queue";
