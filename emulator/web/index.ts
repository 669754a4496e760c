// The emulator's local web: corpus pages and web.emulator.test on a loopback server, the only web jobs can reach.
export { LocalSite, HOME_SITE, type SitePage } from "./site.js";
export { startLocalWeb, type LocalWeb, type LocalWebResponse } from "./server.js";
export { readPdfText, writePdf } from "./pdf.js";
export { PRODUCTS } from "./home-site.js";
