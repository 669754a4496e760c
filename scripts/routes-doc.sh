#!/usr/bin/env bash
# Rewrites docs/routes.md's table from the route table (`tollgate routes`), keeping the prose above it; the other
# generated references come along (npm run docs:gen).
set -euo pipefail
cd "$(dirname "$0")/.."
exec npx tsx scripts/gen-docs.ts
