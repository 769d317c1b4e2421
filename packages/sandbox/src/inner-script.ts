import { launchMarkerName } from "./launch-end.js";

/**
 * The shell text a confined launch runs inside the sandbox: forwarders that make each allowed
 * loopback endpoint (a model server on the host's 127.0.0.1) answer at the same address in the
 * sandbox's own network namespace, through the sandbox's proxy, which enforces the allowlist; a
 * bridge from a Unix socket the host reaches to a port served inside; then the program itself.
 */
export interface InnerScript {
  /** `host:port` endpoints on the host's loopback the process may reach. */
  loopback: readonly { host: string; port: number }[];
  /** A port served inside, bridged to this Unix socket (which the host connects to). */
  expose?: { port: number; socket: string };
  /** Where the launch's PID namespace is written (`pid:[…]`), for the host to wait on its end. */
  namespaceFile?: string;
  /** Set after the sandbox's own variables (it sets TMPDIR to a shared directory). */
  env: Readonly<Record<string, string>>;
  file: string;
  args: readonly string[];
}

/** Bounded wait for a forwarder to listen: 200 × 10 ms. */
const waitTries = 200;

export function innerScript(script: InnerScript): string {
  const lines: string[] = [];
  if (script.namespaceFile !== undefined) {
    lines.push(`readlink /proc/self/ns/pid > ${quote(script.namespaceFile)} 2>/dev/null`);
  }
  if (script.loopback.length > 0) {
    // The proxy's credentials are in HTTP_PROXY (`http://user:pass@localhost:PORT`), URL-encoded.
    lines.push(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      '_tl_p="${HTTP_PROXY#http://}"; _tl_auth="${_tl_p%@*}"; _tl_hp="${_tl_p##*@}"',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      '_tl_auth="$(printf "%b" "${_tl_auth//%/\\\\x}")"; _tl_pport="${_tl_hp##*:}"',
    );
    for (const { host, port } of script.loopback) {
      lines.push(
        `socat TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr PROXY:localhost:${host}:${port},proxyport="$_tl_pport",proxyauth="$_tl_auth" >/dev/null 2>&1 &`,
      );
    }
    lines.push(
      ...script.loopback.map(
        ({ port }) =>
          // Listening is a line of /proc/net/tcp (state 0A); no test connection reaches the model.
          `_tl_i=0; until grep -q ":${hexPort(port)} 00000000:0000 0A" /proc/net/tcp 2>/dev/null || [ "$_tl_i" -ge ${waitTries} ]; do _tl_i=$((_tl_i+1)); sleep 0.01; done`,
      ),
    );
  }
  if (script.expose) {
    lines.push(
      `socat UNIX-LISTEN:${quote(script.expose.socket)},fork,unlink-early TCP:127.0.0.1:${script.expose.port} >/dev/null 2>&1 &`,
    );
  }
  const exports = Object.entries(script.env).map(([key, value]) => `${key}=${quote(value)}`);
  // The launch's marker stays with the sandbox's own processes, not the program's.
  lines.push(`unset _tl_p _tl_auth _tl_hp _tl_pport _tl_i ${launchMarkerName}`);
  if (exports.length > 0) lines.push(`export ${exports.join(" ")}`);
  lines.push(`exec ${[script.file, ...script.args].map(quote).join(" ")}`);
  return lines.join("\n");
}

function hexPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, "0");
}

/** One POSIX shell word. */
export function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
