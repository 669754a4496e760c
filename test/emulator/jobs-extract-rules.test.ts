// The rule-based extractor alone (pure logic): how each schema key finds its value on a page.
import { describe, expect, it } from "vitest";
import { extractWithSchema } from "../../emulator/jobs/extract-rules.js";
import type { PageStructure } from "../../emulator/jobs/page-structure.js";

const page = (over: Partial<PageStructure> = {}): PageStructure => ({
  url: "https://example.test/a",
  title: "Head title | Site",
  description: "Meta description.",
  headings: ["Main Heading", "Details"],
  paragraphs: ["The first paragraph says hello.", "Revenue grew in the north region last year."],
  lists: [],
  facts: [],
  tables: [],
  links: ["https://example.test/b"],
  ...over,
});

const obj = (properties: Record<string, unknown>) => ({ type: "object", properties });

describe("extractWithSchema", () => {
  it("takes a fact labelled like the key (camelCase or not), then the key's alias, then a sentence naming it", () => {
    const doc = page({
      facts: [
        ["Published at", "2024-05-01"],
        ["Number of staff", "1,250"],
        ["og:title", "OG title"],
      ],
    });
    expect(
      extractWithSchema(
        obj({
          publishedAt: { type: "string" },
          staff: { type: "integer" },
          title: { type: "string" },
          description: { type: "string" },
          url: { type: "string" },
          region: { type: "string" },
        }),
        [doc],
      ),
    ).toEqual({
      publishedAt: "2024-05-01",
      staff: 1250,
      title: "Main Heading",
      description: "Meta description.",
      url: "https://example.test/a",
      region: "Revenue grew in the north region last year.",
    });
  });

  it("answers null for what the page does not say, and for values that do not fit the type", () => {
    const doc = page({ facts: [["Price", "on request"]] });
    expect(extractWithSchema(obj({ price: { type: "number" }, ceo: { type: "string" } }), [doc])).toEqual({ price: null, ceo: null });
  });

  it("picks the enum value the text names, reads yes/no as booleans, and follows $ref and nullable anyOf", () => {
    const doc = page({
      facts: [
        ["Status", "Currently ACTIVE since May"],
        ["Open", "yes"],
        ["Closed", "no"],
      ],
    });
    const schema = {
      type: "object",
      properties: {
        status: { enum: ["active", "retired"] },
        open: { type: "boolean" },
        closed: { anyOf: [{ type: "boolean" }, { type: "null" }] },
        where: { $ref: "#/$defs/place" },
      },
      $defs: { place: { type: "object", properties: { url: { type: "string" } } } },
    };
    expect(extractWithSchema(schema, [doc])).toEqual({
      status: "active",
      open: true,
      closed: false,
      where: { url: "https://example.test/a" },
    });
  });

  it("fills arrays from the list under a matching heading, a table column, links or headings", () => {
    const doc = page({
      lists: [
        { heading: "Other", items: ["x"] },
        { heading: "Our values", items: ["Honesty", "Repair"] },
      ],
      tables: [
        {
          headers: ["Name", "Price"],
          rows: [
            ["A", "1.50"],
            ["B", "2"],
          ],
        },
      ],
    });
    const schema = obj({
      values: { type: "array", items: { type: "string" } },
      names: { type: "array", items: { type: "string" } },
      links: { type: "array", items: { type: "string" } },
      headings: { type: "array", items: { type: "string" }, maxItems: 1 },
    });
    expect(extractWithSchema(schema, [doc])).toEqual({
      values: ["Honesty", "Repair"],
      names: ["A", "B"],
      links: ["https://example.test/b"],
      headings: ["Main Heading"],
    });
  });

  it("makes an array of objects from table rows, or one object per page when no table matches", () => {
    const table = page({
      tables: [
        {
          headers: ["Product name", "Price (EUR)"],
          rows: [
            ["A", "1.50"],
            ["B", "2"],
          ],
        },
      ],
    });
    const rows = obj({ items: { type: "array", items: obj({ name: { type: "string" }, price: { type: "number" } }) } });
    expect(extractWithSchema(rows, [table])).toEqual({
      items: [
        { name: "A", price: 1.5 },
        { name: "B", price: 2 },
      ],
    });
    const perPage = obj({ pages: { type: "array", items: obj({ title: { type: "string" }, url: { type: "string" } }) } });
    expect(extractWithSchema(perPage, [page(), page({ url: "https://example.test/c", headings: ["Second"] })])).toEqual({
      pages: [
        { title: "Main Heading", url: "https://example.test/a" },
        { title: "Second", url: "https://example.test/c" },
      ],
    });
  });
});
