export {
  createTelemetry,
  type ResumeTraceOptions,
  type Telemetry,
  type TelemetryOptions,
  type TracerProviderLike,
  traceRefsOf,
} from "./telemetry.js";
