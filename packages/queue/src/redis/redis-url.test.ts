import { InvalidConfigError } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { redactRedisUrl, redisOptionsFromUrl } from "./redis-url.js";

describe("Redis URLs", () => {
  it("carry user, password, database and TLS; printed without the password", () => {
    expect(redisOptionsFromUrl("rediss://worker:s%40cret@queue.internal:6380/3")).toEqual({
      host: "queue.internal",
      port: 6380,
      username: "worker",
      password: "s@cret",
      db: 3,
      tls: { servername: "queue.internal" },
    });
    expect(redisOptionsFromUrl("redis://127.0.0.1")).toEqual({ host: "127.0.0.1", port: 6379 });
    expect(redactRedisUrl("redis://:pw@host:1")).toBe("redis://:***@host:1");
    expect(() => redisOptionsFromUrl("http://host")).toThrow(InvalidConfigError);
  });
});
