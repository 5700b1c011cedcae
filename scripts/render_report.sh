#!/usr/bin/env bash
# Renders a `kiln bench --report` HTML file in headless Chromium (Debian package `chromium`):
# a PNG screenshot and, when asked, the DOM as the browser built it. Needs no network: the report
# is self-contained, and Chromium runs with networking off.
#   scripts/render_report.sh REPORT.html OUT.png [DOM.html]
set -euo pipefail

if (($# < 2)); then
    echo "usage: $0 REPORT.html OUT.png [DOM.html]" >&2
    exit 2
fi
report="$(realpath "$1")"
png="$(realpath -m "$2")"
browser="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$browser" ]]; then
    echo "render_report: no chromium on PATH (apt-get install chromium)" >&2
    exit 77
fi
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile"
       --proxy-server=127.0.0.1:9 --window-size="${KILN_RENDER_WINDOW:-1100,2400}" --hide-scrollbars)
"$browser" "${flags[@]}" --screenshot="$png" "file://$report" >/dev/null 2>&1
if (($# >= 3)); then
    "$browser" "${flags[@]}" --dump-dom "file://$report" >"$3" 2>/dev/null
fi
[[ -s "$png" ]] || { echo "render_report: chromium wrote no screenshot" >&2; exit 1; }
