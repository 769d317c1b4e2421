export {
  type AnswerResult,
  firstAnswer,
  type PageAnswer,
  ReviewBroker,
} from "./review-broker.js";
export { type LiveRun, startUiServer, type UiServer, type UiServerOptions } from "./ui-server.js";
export type * from "./view.js";
