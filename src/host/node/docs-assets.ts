// The docs page's assets on Node: files of the installed swagger-ui-dist package, read once and kept.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { DocsAssets } from "../../operators/http/docs.js";

export function nodeDocsAssets(): DocsAssets | undefined {
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  } catch {
    return undefined; // not installed: the page answers 404 docs_unavailable
  }
  const cache = new Map<string, Promise<Uint8Array | undefined>>();
  return (name) => {
    let file = cache.get(name);
    if (!file)
      cache.set(
        name,
        (file = readFile(join(dir, name)).then(
          (b) => new Uint8Array(b),
          () => undefined,
        )),
      );
    return file;
  };
}
