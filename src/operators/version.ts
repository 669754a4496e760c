// The gateway's version: what /_tollgate/health answers, the metrics' build info and the OpenAPI document carry.
// A plain module (no route, no chain) so that any of them reads it.
export const VERSION = "0.1.0";
