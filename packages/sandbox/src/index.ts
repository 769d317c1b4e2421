export { credentialStores } from "./credential-stores.js";
export { type AllowedHost, parseHost } from "./network-hosts.js";
export { createSandbox, type SandboxOptions } from "./os-sandbox.js";
