#!/usr/bin/env bash
# Vendor KaTeX into worklog_gen/site/static/katex/ (package data) so that math renders from the site itself
# (offline, and in the browser tests), never from a CDN.
#
# What it does, reproducibly:
#   1. `npm pack katex@$VERSION` fetches the release tarball from the npm registry;
#   2. its sha256 is checked against the pinned value below;
#   3. it keeps katex.min.js, katex.min.css, the woff2 fonts and KaTeX's LICENSE;
#   4. it drops the woff/ttf fallbacks from the stylesheet's @font-face rules, since
#      only woff2 is shipped (every browser that runs KaTeX reads woff2).
# The init script that renders arithmatex's output is ours: worklog_gen/site/static/katex.js.
#
# Usage: scripts/vendor_katex.sh   (from anywhere; needs npm, tar, sha256sum, sed)
set -euo pipefail

VERSION=0.19.1
SHA256=24da5a599eb2fcede2e270b99a6ff48bca816beecc95feeb84e8cccbd1bb34fd  # katex-0.19.1.tgz

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/worklog_gen/site/static/katex"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "katex@$VERSION" >/dev/null)
tarball="$work/katex-$VERSION.tgz"
echo "$SHA256  $tarball" | sha256sum --check --quiet
tar -xzf "$tarball" -C "$work"

rm -rf "$dest"
mkdir -p "$dest/fonts"
cp "$work/package/dist/katex.min.js" "$dest/"
cp "$work/package/dist/fonts/"*.woff2 "$dest/fonts/"
cp "$work/package/LICENSE" "$dest/LICENSE"
sed -E 's/,url\(fonts\/[A-Za-z0-9_-]+\.woff\) format\("woff"\),url\(fonts\/[A-Za-z0-9_-]+\.ttf\) format\("truetype"\)//g' \
  "$work/package/dist/katex.min.css" >"$dest/katex.min.css"
if grep -qE '\.(woff|ttf)\)' "$dest/katex.min.css"; then
  echo "vendor_katex.sh: katex.min.css still names woff/ttf fonts; update the sed pattern" >&2
  exit 1
fi
echo "KaTeX $VERSION vendored into ${dest#"$root"/} ($(du -sh "$dest" | cut -f1))"
