export {
  createTelemetry,
  type ResumeTraceOptions,
  type Telemetry,
  type TelemetryOptions,
  traceRefsOf,
} from "./telemetry.js";
