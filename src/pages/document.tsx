/** @jsxImportSource hono/jsx */
// The page kit shared by the console (src/console/) and the OAuth consent and error pages (src/oauth/): the document
// around a page's content (head, the one style sheet, the Tollgate header), and the headers of a page that runs no
// script. The console adds its navigation and script; the OAuth pages add nothing. Neither imports the other.
import type { Child } from "hono/jsx";
import { raw } from "hono/html";
import { PAGE_CSS } from "./style.js";

export interface DocumentProps {
  /** The whole <title>. */
  title: string;
  /** The CSP nonce of the page's style (and script), when its policy asks for one. */
  nonce?: string;
  /** Rules added after the shared style sheet. */
  css?: string;
  /** A viewport meta (pages read on phones). */
  viewport?: boolean;
  /** What the header holds after the brand (the console's navigation, who is signed in, sign-out). */
  header?: Child;
  /** After <main> (the console's one script). */
  after?: Child;
  children?: Child;
}

/** A page's document: head with the style sheet, the Tollgate header, the content in <main>. */
export function Document(props: DocumentProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        {props.viewport ? <meta name="viewport" content="width=device-width, initial-scale=1" /> : null}
        <title>{props.title}</title>
        <style nonce={props.nonce}>{raw(PAGE_CSS + (props.css ?? ""))}</style>
      </head>
      <body>
        <header>
          <span class="brand">Tollgate</span>
          {props.header}
        </header>
        <main>{props.children}</main>
        {props.after}
      </body>
    </html>
  );
}

/** Headers for a page that runs no script at all: never framed, cached or sniffed. */
const SCRIPTLESS_PAGE_HEADERS = {
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** A scriptless page as a response. */
export const scriptlessPage = (body: unknown, status: number) =>
  new Response(`<!doctype html>${body}`, { status, headers: { "content-type": "text/html; charset=utf-8", ...SCRIPTLESS_PAGE_HEADERS } });
