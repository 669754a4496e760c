// Preload for `depcruise`: dependency-cruiser 17 parses TypeScript with the `typescript` compiler API (<7), but the
// project's own `typescript` is 7 (the native compiler, no JS API). This hands dependency-cruiser the TypeScript 5 that
// dpdm (lint:cycles) already installs, for its imports only; nothing else in the process sees it.
// Used as: node --import ./scripts/depcruise-typescript.mjs node_modules/dependency-cruiser/bin/dependency-cruise.mjs
import Module, { createRequire, register } from "node:module";
import { pathToFileURL } from "node:url";

const fromDpdm = createRequire(createRequire(import.meta.url).resolve("dpdm/package.json"));
const manifest = fromDpdm.resolve("typescript/package.json");
const main = fromDpdm.resolve("typescript");
// Without a TypeScript it can use, dependency-cruiser skips every .ts file and reports "no violations": refuse instead.
const { version } = fromDpdm("typescript/package.json");
if (!/^[2-6]\./.test(version))
  throw new Error(`lint:boundaries needs a TypeScript 2–6 compiler API beside dpdm; found typescript@${version} (${manifest})`);
const cruiser = "/node_modules/dependency-cruiser/";

const original = Module._resolveFilename;
Module._resolveFilename = function resolveFilename(request, parent, ...rest) {
  if (parent?.filename?.includes(cruiser)) {
    if (request === "typescript") return main;
    if (request === "typescript/package.json") return manifest;
  }
  return original.call(this, request, parent, ...rest);
};

register(
  `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      if (specifier === "typescript" && context.parentURL?.includes(${JSON.stringify(cruiser)}))
        return { url: ${JSON.stringify(pathToFileURL(main).href)}, shortCircuit: true };
      return next(specifier, context);
    }`)}`,
);
