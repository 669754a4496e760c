// The Node entry's choice of state backend: Redis when configured, shared through Redis, closed with the gateway.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway } from "../../src/host/node.js";
import { nodeStateStores } from "../../src/host/node/stores.js";
import { redisStores, type RedisStores } from "../../src/state/redis.js";
import { startRedisServer, type RedisServer } from "./redis-server.js";

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

const config = (state: Record<string, unknown>) =>
  parseConfig({ server: { host: "127.0.0.1", port: 0, logLevel: "error" }, state, payments: { enabled: false } });

describe("state backend selection on Node", () => {
  it("uses Redis when state.backend is redis, so another instance sees the same state, and closes it on close()", async () => {
    const running = await startNodeGateway({ config: config({ backend: "redis", redisUrl: server.url }), secrets: {}, logSink: () => {} });
    const other = redisStores(server.url);
    try {
      const stores = running.gateway.stores as RedisStores;
      await stores.ownership.claim("sandbox", "sb-node", "t1");
      expect(await other.ownership.owner("sandbox", "sb-node")).toBe("t1");
      await running.close();
      expect(stores.connection.client.status).toBe("end");
    } finally {
      await running.close();
      await other.close();
    }
  });

  it("keeps the in-process memory default, and refuses durable-objects outside Workers", () => {
    expect(nodeStateStores(config({}))).toBeUndefined();
    expect(() => nodeStateStores(config({ backend: "durable-objects" }))).toThrow(/only on Workers/);
  });
});
