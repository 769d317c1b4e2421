/**
 * What a build reads in the user's home (`~` is the user's real home, as in `credentialStores`):
 * version managers, toolchains and package caches. Every launch reads these, its project, the
 * toolchains on its PATH and its own program's install; the rest of the home is hidden. A
 * credential store beneath one (`~/.cargo/credentials.toml`) stays denied.
 */
export const toolchainRoots: readonly string[] = [
  // Node: version managers, runtimes, package managers' caches and stores, native builds' headers.
  "~/.nvm",
  "~/.fnm",
  "~/.local/share/fnm",
  "~/.volta",
  "~/.bun",
  "~/.deno",
  "~/.cache/deno",
  "~/.npm",
  "~/.node-gyp",
  "~/.cache/node-gyp",
  "~/.cache/yarn",
  "~/.yarn",
  "~/.pnpm-store",
  "~/.local/share/pnpm",
  "~/.cache/pnpm",
  "~/.cache/ms-playwright",
  "~/.cache/Cypress",
  "~/.cache/puppeteer",
  // Python.
  "~/.pyenv",
  "~/.local/bin",
  "~/.local/lib",
  "~/.local/include",
  "~/.local/share/pipx",
  "~/.local/share/uv",
  "~/.local/share/virtualenvs",
  "~/.local/share/pypoetry",
  "~/.cache/pip",
  "~/.cache/uv",
  "~/.cache/pypoetry",
  "~/.conda",
  "~/miniconda3",
  "~/miniforge3",
  "~/anaconda3",
  // Rust.
  "~/.cargo",
  "~/.rustup",
  // Go.
  "~/go",
  "~/.go",
  "~/.cache/go-build",
  "~/.config/go",
  // JVM.
  "~/.m2",
  "~/.gradle",
  "~/.sdkman",
  // Ruby.
  "~/.rbenv",
  "~/.rvm",
  "~/.gem",
  // Other toolchains and version managers.
  "~/.asdf",
  "~/.local/share/mise",
  "~/.ghcup",
  "~/.cabal",
  "~/.stack",
  "~/.dotnet",
  "~/.nuget/packages",
  // macOS keeps the same caches under ~/Library/Caches.
  "~/Library/Caches/pip",
  "~/Library/Caches/pypoetry",
  "~/Library/Caches/Yarn",
  "~/Library/Caches/pnpm",
  "~/Library/pnpm",
  "~/Library/Caches/deno",
  "~/Library/Caches/go-build",
  "~/Library/Caches/ms-playwright",
  "~/Library/Caches/Cypress",
  // git's own settings (its credentials file is a credential store, denied).
  "~/.gitconfig",
  "~/.config/git",
];
