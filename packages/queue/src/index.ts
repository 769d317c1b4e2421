export {
  type AttemptJobData,
  type AttemptJobResult,
  attemptJobId,
  attemptRefs,
  defaultQueueName,
  type WorkerIdentity,
} from "./attempt-job.js";
export {
  type AttemptWorker,
  type AttemptWorkerOptions,
  startAttemptWorker,
} from "./attempt-worker.js";
export {
  createQueueExecutor,
  type QueueExecutor,
  type QueueExecutorOptions,
} from "./queue-executor.js";
export { redactRedisUrl, redisOptionsFromUrl } from "./redis-url.js";
export { defaultKeptExecutors, type JobAgentSettings } from "./warm-executors.js";
