/** The opencode release this package is built and tested against (its `opencode-ai` dependency). */
export const opencodeVersion = "1.18.33";
