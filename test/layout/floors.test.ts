// The house's floors (.dependency-cruiser.cjs): src/web/ (the Web seams) is the bottom, importing only itself and the
// base modules; src/host/ (the Node and Worker entries, the Node-only adapters) is the top, imported by nothing shipped
// but itself and src/cli/. dependency-cruiser runs (as `npm run lint:boundaries` does) with the repo's own rules on a
// few files written to a temporary tree shaped like the repo, and must name the rule; the same files without the
// forbidden import pass.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cruisePlanted, type PlantedViolation } from "./planted-tree.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tollgate-floors-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes `files` under a fresh tree and cruises it with the repo's rules: the rules broken, per import. */
async function cruise(name: string, files: Record<string, string>): Promise<PlantedViolation[]> {
  const found = await cruisePlanted(join(dir, name), files);
  return found.sort((a, b) => `${a.from} ${a.to}`.localeCompare(`${b.from} ${b.to}`));
}

/** The same small house each time: a base module, two Web seams, the upstream client, the services, a Node entry. */
const house = {
  "src/errors.ts": "export class GatewayError extends Error {}\n",
  "src/services.ts": "export interface GatewayServices { now(): number }\n",
  "src/web/cidr.ts": "export const cidrMatcher = () => () => true;\n",
  "src/upstream/client.ts": 'import { cidrMatcher } from "../web/cidr";\nexport const callUpstream = () => cidrMatcher();\n',
  "src/host/node/undici-transport.ts": "export const undiciTransport = () => ({});\n",
  // the top reaches down: allowed
  "src/host/node.ts":
    'import { undiciTransport } from "./node/undici-transport";\nimport { callUpstream } from "../upstream/client";\nexport const start = () => [undiciTransport(), callUpstream()];\n',
};

describe("the house's floors", () => {
  it("catches a Web seam importing upward (the services, the upstream client), not one importing a base module", async () => {
    const planted = await cruise("web-up", {
      ...house,
      "src/web/forwarded.ts":
        'import type { GatewayServices } from "../services";\nimport { callUpstream } from "../upstream/client";\nimport { GatewayError } from "../errors";\nimport { cidrMatcher } from "./cidr";\nexport const view = (s: GatewayServices) => [s, callUpstream(), new GatewayError(), cidrMatcher()];\n',
    });
    expect(planted).toEqual([
      { from: "src/web/forwarded.ts", to: "src/services.ts", rule: "web-seams-import-nothing-above" },
      { from: "src/web/forwarded.ts", to: "src/upstream/client.ts", rule: "web-seams-import-nothing-above" },
    ]);
    const clean = await cruise("web-clean", {
      ...house,
      "src/web/forwarded.ts":
        'import { GatewayError } from "../errors";\nimport { cidrMatcher } from "./cidr";\nexport const view = () => [new GatewayError(), cidrMatcher()];\n',
    });
    expect(clean).toEqual([]);
  }, 60_000);

  it("catches the core importing the top floor (an entry or a Node adapter)", async () => {
    const planted = await cruise("host-down", {
      ...house,
      "src/routing/handlers.ts":
        'import { start } from "../host/node";\nimport { cidrMatcher } from "../web/cidr";\nexport const handle = () => [start(), cidrMatcher()];\n',
    });
    expect(planted).toEqual([{ from: "src/routing/handlers.ts", to: "src/host/node.ts", rule: "host-is-the-top" }]);
  }, 60_000);

  it("catches the route table importing an operator's schema, and the agent-policy engine importing the table", async () => {
    const planted = await cruise("table-up", {
      ...house,
      "src/operators/actions/tokens.ts": "export const mintRequest = {};\n",
      "src/routing/table.ts": 'import { mintRequest } from "../operators/actions/tokens";\nexport const ROUTES = [mintRequest];\n',
      "src/agent-policy/engine.ts":
        'import { ROUTES } from "../routing/table";\nimport { cidrMatcher } from "../web/cidr";\nexport const apply = () => [ROUTES, cidrMatcher()];\n',
    });
    expect(planted).toEqual([
      { from: "src/agent-policy/engine.ts", to: "src/routing/table.ts", rule: "agent-policy-below-the-table" },
      { from: "src/routing/table.ts", to: "src/operators/actions/tokens.ts", rule: "the-table-imports-no-operator" },
    ]);
    const clean = await cruise("table-clean", {
      ...house,
      "src/routing/admin-schemas.ts": "export const mintRequest = {};\n",
      "src/operators/actions/tokens.ts":
        'import { mintRequest } from "../../routing/admin-schemas";\nexport const mint = () => mintRequest;\n',
      "src/routing/table.ts": 'import { mintRequest } from "./admin-schemas";\nexport const ROUTES = [mintRequest];\n',
      "src/agent-policy/engine.ts": 'import { cidrMatcher } from "../web/cidr";\nexport const apply = () => cidrMatcher();\n',
    });
    expect(clean).toEqual([]);
  }, 60_000);
});
