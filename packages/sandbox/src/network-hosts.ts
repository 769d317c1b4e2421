import { InvalidConfigError } from "@taskledger/core";

/** One allowed host as the runtime matches it, and whether it is on the host's own loopback. */
export interface AllowedHost {
  /** As the runtime's allowlist takes it: `api.example.com`, `*.example.com`, `127.0.0.1:8080`. */
  pattern: string;
  host: string;
  port: number;
  /** A loopback endpoint (a local model server): forwarded into the sandbox's own loopback. */
  loopback: boolean;
}

const loopbackHosts = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

/**
 * A host from the user (`--allow-host`, `sandbox.network.allow`) or an endpoint URL: a name with
 * an optional port, a `*.` wildcard, an IP literal, or a URL whose host and port are taken.
 * A loopback host needs its port (the rest of the loopback stays closed).
 */
export function parseHost(given: string): AllowedHost {
  const text = given.trim();
  let host: string;
  let port = 0;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new InvalidConfigError(`sandbox host ${JSON.stringify(given)} is not a valid URL`);
    }
    host = url.hostname;
    port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  } else {
    const match = /^(\[[0-9a-f:]+\]|[^:\s/]+)(?::(\d{1,5}))?$/i.exec(text);
    if (!match) {
      throw new InvalidConfigError(
        `sandbox host ${JSON.stringify(given)} must be a host name, host:port, *.domain or a URL`,
      );
    }
    host = match[1] as string;
    port = match[2] ? Number(match[2]) : 0;
  }
  if (port > 65_535)
    throw new InvalidConfigError(`sandbox host ${JSON.stringify(given)}: bad port`);
  const loopback = loopbackHosts.has(host);
  if (loopback && port === 0) {
    throw new InvalidConfigError(
      `sandbox host ${JSON.stringify(given)} is on this machine's loopback: name its port (127.0.0.1:8080)`,
    );
  }
  // The runtime dials an allowed name only if it resolves off the loopback: a local endpoint is
  // allowed by its address.
  const address = host === "localhost" ? "127.0.0.1" : host;
  return { pattern: port ? `${address}:${port}` : address, host: address, port, loopback };
}
