// The pages of web.emulator.test, the local web's own site: a home page, facts, a product table, a PDF, a slow page.
import { writePdf } from "./pdf.js";

export const HOME_SITE = "web.emulator.test";

export interface SitePage {
  status: number;
  contentType: string;
  body: string | Buffer;
  /** Milliseconds the server waits before answering (the slow page). */
  delayMs?: number;
}

export const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

const HTML = "text/html; charset=utf-8";

/** A whole HTML document; `main` is the page body, wrapped in the site's header and footer. */
export function htmlDocument(opts: { title: string; description?: string; main: string; nav?: string; footer?: string }): string {
  const meta = opts.description
    ? `<meta name="description" content="${esc(opts.description)}"><meta property="og:title" content="${esc(opts.title)}">`
    : "";
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(opts.title)}</title>${meta}` +
    `<style>body{font-family:sans-serif;margin:2em;max-width:50em}nav{border-bottom:1px solid #ccc;margin-bottom:1em}footer{color:#777;margin-top:2em}</style></head>` +
    `<body><nav>${opts.nav ?? ""}</nav><main>${opts.main}</main><footer>${opts.footer ?? "Served by the emulator's local web"}</footer></body></html>`
  );
}

export const PRODUCTS = [
  { slug: "trail-runner", name: "Trail Runner Shoe", price: 129.0, category: "Footwear", inStock: true },
  { slug: "summit-jacket", name: "Summit Rain Jacket", price: 219.5, category: "Outerwear", inStock: true },
  { slug: "camp-stove", name: "Compact Camp Stove", price: 59.95, category: "Cooking", inStock: false },
  { slug: "headlamp", name: "Ridge Headlamp", price: 34.0, category: "Lighting", inStock: true },
];

const NAV = `<a href="/">Home</a> · <a href="/about">About</a> · <a href="/products">Products</a> · <a href="/report.pdf">Report (PDF)</a>`;

function page(title: string, description: string, main: string): SitePage {
  return { status: 200, contentType: HTML, body: htmlDocument({ title, description, main, nav: NAV }) };
}

/** The site's pages by path; `corpusLinks` are a few corpus pages the home page links out to. */
export function homeSitePage(
  path: string,
  query: URLSearchParams,
  corpusLinks: Array<{ url: string; title: string }>,
): SitePage | undefined {
  switch (path) {
    case "/":
      return page(
        "Emulator Web: Home",
        "The home page of the emulator's local web, with links to every kind of page a job meets.",
        `<h1>Emulator Web</h1><p>This site lives on loopback inside the emulator. Jobs reach it as http://${HOME_SITE}/.</p>` +
          `<h2>Pages</h2><ul><li><a href="/about">About the company</a></li><li><a href="/products">Product catalogue</a></li>` +
          `<li><a href="/report.pdf">Annual report (PDF)</a></li><li><a href="/slow">A slow page</a></li><li><a href="/missing-page">A missing page</a></li></ul>` +
          `<h2>Elsewhere</h2><ul>${corpusLinks.map((l) => `<li><a href="${esc(l.url)}">${esc(l.title)}</a></li>`).join("")}</ul>`,
      );
    case "/about":
      return page(
        "About Emulator Outfitters",
        "Emulator Outfitters makes outdoor gear and has done since 1998.",
        `<h1>About Emulator Outfitters</h1><p>We make outdoor gear for people who walk a long way.</p>` +
          `<h2>Company facts</h2><dl><dt>Company</dt><dd>Emulator Outfitters</dd><dt>Founded</dt><dd>1998</dd>` +
          `<dt>Headquarters</dt><dd>Lisbon, Portugal</dd><dt>Employees</dt><dd>240</dd></dl>` +
          `<h2>Contact</h2><p>Email: hello@web.emulator.test</p><p>Phone: +351 21 000 0000</p>` +
          `<h2>Values</h2><ul><li>Repair before replace</li><li>Honest sizing</li><li>Lifetime warranty</li></ul>`,
      );
    case "/products":
      return page(
        "Products | Emulator Outfitters",
        "The full catalogue of Emulator Outfitters, with prices.",
        `<h1>Products</h1><table><thead><tr><th>Name</th><th>Price</th><th>Category</th><th>In stock</th></tr></thead><tbody>` +
          PRODUCTS.map(
            (p) =>
              `<tr><td><a href="/products/${p.slug}">${esc(p.name)}</a></td><td>${p.price.toFixed(2)}</td><td>${p.category}</td><td>${p.inStock ? "yes" : "no"}</td></tr>`,
          ).join("") +
          `</tbody></table>`,
      );
    case "/report.pdf":
      return {
        status: 200,
        contentType: "application/pdf",
        body: writePdf("Emulator Outfitters Annual Report 2025", [
          "Revenue: 12.4 million euros",
          "Employees: 240",
          "The year saw two new shops open and the repair service double in size.",
          "Outlook: steady growth in footwear and outerwear.",
        ]),
      };
    case "/slow": {
      const ms = Math.min(Math.max(Number(query.get("ms") ?? 3000) || 0, 0), 30_000);
      return {
        ...page(
          "A Slow Page",
          `This page took ${ms} ms to arrive.`,
          `<h1>A Slow Page</h1><p>The server waited ${ms} ms before answering.</p>`,
        ),
        delayMs: ms,
      };
    }
  }
  const product = /^\/products\/([a-z0-9-]+)$/.exec(path);
  const p = product && PRODUCTS.find((x) => x.slug === product[1]);
  if (p) {
    return page(
      `${p.name} | Emulator Outfitters`,
      `${p.name}, ${p.category.toLowerCase()}, ${p.price.toFixed(2)} euros.`,
      `<h1>${esc(p.name)}</h1><p>Price: ${p.price.toFixed(2)}</p><p>Category: ${p.category}</p><p>In stock: ${p.inStock ? "yes" : "no"}</p>` +
        `<p><a href="/products">Back to all products</a></p>`,
    );
  }
  return undefined;
}

export function notFoundPage(host: string, path: string): SitePage {
  return {
    status: 404,
    contentType: HTML,
    body: htmlDocument({
      title: "404 Not Found",
      main: `<h1>Not Found</h1><p>There is no page at ${esc(path)} on ${esc(host)}.</p>`,
      nav: `<a href="/">Home</a>`,
    }),
  };
}
