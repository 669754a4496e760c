// The header work of the bench's bare pipes (raw-node-proxy-process.ts, undici-pipe-process.ts): the hop-by-hop headers
// RFC 9110 §7.6.1 names, plus the Host and Authorization a proxy replaces with the upstream's. Their own list, not the
// gateway's (src/web/transport.ts): a floor that imported the gateway would measure part of it.
export const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "host",
  "authorization",
]);
