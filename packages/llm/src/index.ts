export { type CreateModelOptions, createModel, type Provider } from "./models/create-model.js";
export { type DefaultModels, defaultModels } from "./models/default-models.js";
export {
  costOf,
  createPricing,
  type ModelPrice,
  type PriceTable,
  type Pricing,
  type PricingOptions,
} from "./prices/price-table.js";
export { type ProviderJsonSchema, toProviderJsonSchema } from "./providers/json-schema.js";
export type { JsonMode } from "./providers/provider-call.js";
export { redactSecrets } from "./providers/provider-error.js";
export type { Backoff } from "./providers/provider-model.js";
export type { ModelWarning } from "./providers/sdk-warnings.js";
