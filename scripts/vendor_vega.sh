#!/usr/bin/env bash
# Vendor vega, vega-lite and vega-embed into worklog_gen/site/static/vega/ (package data) so that charts draw from the
# site itself (offline, and in the browser tests), never from a CDN.
#
# What it does, reproducibly:
#   1. `npm pack <package>@<version>` fetches each release tarball from the npm registry;
#   2. its sha256 is checked against the pinned value below;
#   3. it keeps the minified browser build (build/*.min.js, less its source-map comment)
#      and the package's LICENSE.
# The versions are the ones Altair 5.5 writes specs for (altair.vegalite.v5.display:
# VEGA_VERSION 5, VEGALITE_VERSION 5.20.1, VEGAEMBED_VERSION 6), and the Vega-Lite release
# vl-convert renders the SVG fallbacks with (worklog_gen.charts.VEGALITE_VERSION).
# The script that draws the charts on the pages is ours: worklog_gen/site/static/charts.js.
#
# Usage: scripts/vendor_vega.sh   (from anywhere; needs npm, tar, sha256sum)
set -euo pipefail

PACKAGES=(
  "vega 5.33.0 7b61f992d1a1e196e7f2eeb3d6176e5694949d0d4bbfea237a842d523dd6e1f3"
  "vega-lite 5.20.1 56063762b5419556467cf0acfd5572a8476d1423a683f9574987dc65cc04d8ee"
  "vega-embed 6.29.0 ecf1ee709c2bac9e0a4ead6908114b05b62c71493e10a8a4308109bb070f8eb1"
)

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/worklog_gen/site/static/vega"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

rm -rf "$dest"
mkdir -p "$dest"
for entry in "${PACKAGES[@]}"; do
  read -r name version sha256 <<<"$entry"
  (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
  tarball="$work/$name-$version.tgz"
  echo "$sha256  $tarball" | sha256sum --check --quiet
  mkdir -p "$work/$name"
  tar -xzf "$tarball" -C "$work/$name"
  # without its source-map comment: the .map is not shipped, so a browser's developer tools
  # would ask the site for a file it does not have
  sed '/^\/\/# sourceMappingURL=/d' "$work/$name/package/build/$name.min.js" >"$dest/$name.min.js"
  cp "$work/$name/package/LICENSE" "$dest/LICENSE-$name"
done
echo "vega, vega-lite and vega-embed vendored into ${dest#"$root"/} ($(du -sh "$dest" | cut -f1))"
