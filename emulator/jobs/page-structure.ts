// What a loaded page says, read from its DOM: headings, paragraphs, lists, key/value facts, tables and meta tags.
import type { Page } from "puppeteer-core";

export interface PageStructure {
  url: string;
  title: string;
  description?: string;
  headings: string[];
  paragraphs: string[];
  /** Lists by the heading that precedes them (`""` when none). */
  lists: Array<{ heading: string; items: string[] }>;
  /** `Key: Value` lines, `<dt>/<dd>` pairs and `<meta name|property>` tags, keys as written. */
  facts: Array<[string, string]>;
  tables: Array<{ headers: string[]; rows: string[][] }>;
  links: string[];
}

/** Runs in the page (serialised by puppeteer): keep it self-contained. */
function readDom(): Omit<PageStructure, "url"> {
  const text = (el: Element | null | undefined) => (el?.textContent ?? "").replace(/\s+/g, " ").trim();
  const facts: Array<[string, string]> = [];
  for (const dt of Array.from(document.querySelectorAll("dt"))) {
    const dd = dt.nextElementSibling;
    if (dd && dd.tagName === "DD") facts.push([text(dt), text(dd)]);
  }
  const blocks = Array.from(document.querySelectorAll("p, li, td, dd, h1, h2, h3, h4"));
  for (const b of blocks) {
    const m = /^([A-Za-z][\w ()/-]{0,40}?)\s*:\s+(.+)$/.exec(text(b));
    if (m) facts.push([m[1], m[2]]);
  }
  // Meta tags last: what the page shows wins over what its head says.
  for (const m of Array.from(document.querySelectorAll("meta[name][content], meta[property][content]"))) {
    facts.push([m.getAttribute("name") ?? m.getAttribute("property") ?? "", m.getAttribute("content") ?? ""]);
  }
  const lists: Array<{ heading: string; items: string[] }> = [];
  for (const list of Array.from(document.querySelectorAll("ul, ol"))) {
    if (list.closest("nav, footer")) continue;
    let heading = "";
    for (let el: Element | null = list.previousElementSibling; el; el = el.previousElementSibling) {
      if (/^H[1-6]$/.test(el.tagName)) {
        heading = text(el);
        break;
      }
    }
    lists.push({
      heading,
      items: Array.from(list.children)
        .map((li) => text(li))
        .filter(Boolean),
    });
  }
  const tables = Array.from(document.querySelectorAll("table")).map((t) => {
    const headers = Array.from(t.querySelectorAll("thead th, tr:first-child th")).map((th) => text(th));
    const rows = Array.from(t.querySelectorAll("tbody tr, tr"))
      .filter((tr) => tr.querySelector("td"))
      .map((tr) => Array.from(tr.querySelectorAll("td")).map((td) => text(td)));
    return { headers, rows };
  });
  const links = Array.from(
    new Set(
      Array.from(document.querySelectorAll("a[href]"))
        .map((a) => (a as HTMLAnchorElement).href)
        .filter((h) => /^https?:/.test(h)),
    ),
  );
  return {
    title: document.title || text(document.querySelector("h1")),
    description: document.querySelector('meta[name="description"]')?.getAttribute("content") ?? undefined,
    headings: Array.from(document.querySelectorAll("main h1, main h2, main h3, article h1, article h2, body > h1, body > h2")).map((h) =>
      text(h),
    ),
    paragraphs: Array.from(document.querySelectorAll("p"))
      .filter((p) => !p.closest("nav, footer"))
      .map((p) => text(p))
      .filter(Boolean),
    lists,
    facts,
    tables,
    links,
  };
}

/** Transpilers that keep function names (tsx, esbuild) wrap functions in `__name()`, which pages do not define. */
export async function definePageHelpers(page: Page): Promise<void> {
  await page.evaluate("globalThis.__name = globalThis.__name || ((f) => f)");
}

export async function readStructure(page: Page): Promise<PageStructure> {
  await definePageHelpers(page);
  const s = await page.evaluate(readDom);
  return { url: page.url(), ...s };
}
