export {
  type AnswerResult,
  firstAnswer,
  type PageAnswer,
  ReviewBroker,
} from "./review-broker.js";
export { RunCatalog } from "./run-catalog.js";
export { RunLog } from "./run-log.js";
export { statusOf } from "./run-views.js";
export { type LiveRun, startUiServer, type UiServer, type UiServerOptions } from "./ui-server.js";
export type * from "./view.js";
