/**
 * Where users keep credentials: no sandboxed process reads these (`~` is the user's real home,
 * not the agent's private one). Claude Code's and Codex's own sandboxes deny the same kind of list.
 */
export const credentialStores: readonly string[] = [
  "~/.ssh",
  "~/.aws",
  "~/.azure",
  "~/.config/gcloud",
  "~/.config/gh",
  "~/.config/hub",
  "~/.config/op",
  "~/.config/git/credentials",
  "~/.git-credentials",
  "~/.netrc",
  "~/.docker",
  "~/.kube",
  "~/.npmrc",
  "~/.yarnrc.yml",
  "~/.pypirc",
  "~/.gem/credentials",
  "~/.cargo/credentials",
  "~/.cargo/credentials.toml",
  "~/.gnupg",
  "~/.password-store",
  "~/.local/share/keyrings",
  "~/.terraform.d",
  "~/.vault-token",
  "~/Library/Keychains",
  "~/.claude",
  "~/.claude.json",
  "~/.codex",
  "~/.config/opencode",
  "~/.local/share/opencode",
  "~/.anthropic",
  "~/.openai",
];

/**
 * Where the host's Unix sockets live (Docker's, the ssh and gpg agents', the session bus, X11):
 * hidden from every launch, so that a process that may create sockets reaches none of the host's.
 */
export const socketDirs: readonly string[] = [
  "/run",
  "/var/run",
  "/tmp/.X11-unix",
  "/tmp/.ICE-unix",
  "/private/var/run",
];
