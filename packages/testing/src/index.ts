export { abortableDelay } from "./abortable-delay.js";
export {
  createFakeExecutor,
  type FakeAttempt,
  FakeExecutor,
  type FakeExecutorCall,
  type FakeExecutorOptions,
} from "./fake-executor.js";
export {
  createScriptedModel,
  ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedResponse,
} from "./scripted-model.js";
