#!/usr/bin/env bash
# Re-vendors the dashboard's chart library, uPlot, from npm at the exact
# version (and integrity hash) that package-lock.json pins: the minified
# script, its stylesheet and its licence go to static/assets/vendor/uplot,
# where go:embed picks them up. Nothing is fetched at build or run time.
#
#   make vendor-dashboard                       # the pinned version again
#   (cd dashboard && npm install --package-lock-only --save-exact uplot@X.Y.Z) && make vendor-dashboard
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp package.json package-lock.json "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
src="$tmp/node_modules/uplot"
dst=static/assets/vendor/uplot
mkdir -p "$dst"
cp "$src/dist/uPlot.iife.min.js" "$src/dist/uPlot.min.css" "$dst/"
cp "$src/LICENSE" "$dst/LICENSE.txt"
echo "vendored uplot $(node -p "require('$src/package.json').version") into dashboard/$dst"
