#!/usr/bin/env bash
# Rewrites docs/routes.md's table from the route table (`tollgate routes`), keeping the prose above it.
set -euo pipefail
cd "$(dirname "$0")/.."
{ sed '/^| row |/,$d' docs/routes.md; npx tsx src/cli/index.ts routes; } > docs/routes.md.new
mv docs/routes.md.new docs/routes.md
