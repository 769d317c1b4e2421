export {
  createQueueExecutor,
  type QueueExecutor,
  type QueueExecutorOptions,
} from "./coordinator/queue-executor.js";
export {
  type AttemptJobData,
  type AttemptJobResult,
  attemptJobId,
  attemptRefs,
  defaultQueueName,
  type WorkerIdentity,
} from "./job/attempt-job.js";
export { redactRedisUrl, redisOptionsFromUrl } from "./redis/redis-url.js";
export {
  type AttemptJobEvent,
  type AttemptWorker,
  type AttemptWorkerOptions,
  startAttemptWorker,
} from "./worker/attempt-worker.js";
export { jobLine } from "./worker/job-line.js";
export { defaultKeptExecutors, type JobAgentSettings } from "./worker/warm-executors.js";
