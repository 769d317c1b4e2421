export { credentialStores } from "./credential-stores.js";
export { parseHomeRead } from "./home-reads.js";
export { type AllowedHost, parseHost } from "./network-hosts.js";
export { createSandbox, type SandboxOptions } from "./os-sandbox.js";
export { toolchainRoots } from "./toolchain-roots.js";
