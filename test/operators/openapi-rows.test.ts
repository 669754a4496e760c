// The OpenAPI document is generated from the route table: its operations are exactly the rows that carry a `doc`, every
// own row a client calls carries one (so a new row cannot be left out), and a row's doc (answers, body, parameters)
// is what the document says. Served as is by /_tollgate/openapi.json (test/operators/openapi.test.ts lints it).
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { openApiDocument } from "../../src/operators/http/openapi.js";
import { OWN_ROWS } from "../../src/routing/own-rows.js";
import { BODY } from "../../src/routing/bodies/index.js";
import { methodsOf, ROUTES, type RouteRow } from "../../src/routing/table.js";

type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any> } };
const operations = (doc: Doc) =>
  Object.entries(doc.paths)
    .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();
const asOpenApi = (path: string) => path.replace(/:([A-Za-z]+)/g, "{$1}");

describe("the OpenAPI document, built from the rows", () => {
  it("has one operation per method of each row that carries a doc, and no other", () => {
    const doc = openApiDocument() as unknown as Doc;
    const documented = ROUTES.filter((r) => r.doc).flatMap((r) => methodsOf(r).map((m) => `${m} ${asOpenApi(r.path)}`));
    expect(operations(doc)).toEqual(documented.sort());
    expect(documented.length).toBeGreaterThanOrEqual(34);
  });

  it("documents every own row a client calls: all but the console's pages and the docs page's assets", () => {
    const undocumented = OWN_ROWS.filter((r) => !r.doc && r.path.startsWith("/_tollgate/")).map((r) => r.name);
    expect(undocumented.filter((n) => !n.startsWith("console.") && !n.startsWith("own.docs."))).toEqual([]);
  });

  it("includes POST /_tollgate/admin/console-links with its body and answer", () => {
    const doc = openApiDocument() as unknown as Doc;
    const op = doc.paths["/_tollgate/admin/console-links"]!.post;
    expect(op.operationId).toBe("adminCreateConsoleLink");
    expect(op.tags).toEqual(["admin"]);
    expect(op.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ConsoleLinkCreate" });
    expect(doc.components.schemas.ConsoleLinkCreate.properties).toHaveProperty("ttlSeconds");
    expect(Object.keys(op.responses["201"].content["application/json"].schema.properties)).toEqual(["url", "expiresAt"]);
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["400", "401", "403", "429"]));
  });

  it("takes what a row's doc says: a new row appears with its answers, parameters and caller's security; without a doc, nothing", () => {
    const row: RouteRow = {
      name: "own.example",
      metric: "tollgate",
      method: ["GET", "DELETE"],
      path: "/_tollgate/examples/:id/keys/:keyId",
      auth: ["public"],
      scope: undefined,
      pay: "free",
      body: BODY.none,
      handler: "own.health",
      doc: {
        tag: "gateway",
        summary: "An example",
        query: z.object({ limit: z.string().optional() }),
        answers: { 200: { description: "The example", schema: z.object({ example: z.literal(true) }) }, 409: { description: "Taken" } },
      },
    };
    const doc = openApiDocument(undefined, [row]) as unknown as Doc;
    expect(operations(doc)).toEqual(["DELETE /_tollgate/examples/{id}/keys/{keyId}", "GET /_tollgate/examples/{id}/keys/{keyId}"]);
    const get = doc.paths["/_tollgate/examples/{id}/keys/{keyId}"]!.get;
    expect(get.operationId).toBe("getExamplesIdKeysKeyId");
    expect(get.security).toEqual([]);
    expect(Object.keys(get.responses).sort()).toEqual(["200", "409", "429"]);
    expect(get.parameters.map((p: any) => `${p.in}:${p.name}`).sort()).toEqual(["path:id", "path:keyId", "query:limit"]);
    const { doc: _gone, ...bare } = row;
    expect(operations(openApiDocument(undefined, [bare]) as unknown as Doc)).toEqual([]);
  });
});
