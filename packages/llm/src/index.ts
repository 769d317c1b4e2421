export { type CreateModelOptions, createModel, type Provider } from "./create-model.js";
export { type DefaultModels, defaultModels } from "./default-models.js";
export { type ProviderJsonSchema, toProviderJsonSchema } from "./json-schema.js";
export {
  costOf,
  createPricing,
  type ModelPrice,
  type PriceTable,
  type Pricing,
  type PricingOptions,
} from "./price.js";
export type { JsonMode } from "./provider-call.js";
export { redactSecrets } from "./provider-error.js";
export type { Backoff } from "./provider-model.js";
export type { ModelWarning } from "./sdk-warnings.js";
