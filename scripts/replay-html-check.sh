#!/usr/bin/env bash
# Checks a replay report page (ambient replay --html PAGE) in headless Chromium:
# the page loads, the posts-per-hour chart and the timeline render, and the
# browser logs no console message. With a second argument, saves a screenshot.
#
#   scripts/replay-html-check.sh PAGE.html [SCREENSHOT.png]
#
# Prints what it saw; exits 1 when something is missing, 77 (skipped) when
# Chromium is not installed (Debian: apt-get install chromium).
set -euo pipefail

page=$(realpath "$1")
shot=${2:-}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "SKIPPED: chromium not installed (apt-get install chromium)"
    exit 77
fi
flags=(--headless=new --no-sandbox --disable-gpu --hide-scrollbars --enable-logging=stderr --v=0)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
dom=$("$browser" "${flags[@]}" --dump-dom "file://$page" 2>"$log")
if ! grep -q '<svg id="posts-per-hour"' <<<"$dom"; then
    echo "the posts-per-hour chart is not in the rendered page"
    exit 1
fi
bars=$(grep -o '<rect class=' <<<"$dom" | wc -l)
lines=$(grep -o 'class="line ' <<<"$dom" | wc -l)
bot=$(grep -o 'class="line bot' <<<"$dom" | wc -l)
if [ "$lines" -eq 0 ]; then
    echo "the timeline rendered no line"
    exit 1
fi
if grep -q 'CONSOLE' "$log"; then
    echo "the browser logged console messages:"
    grep 'CONSOLE' "$log"
    exit 1
fi
if [ -n "$shot" ]; then
    "$browser" "${flags[@]}" --window-size=1280,2000 --screenshot="$shot" "file://$page" 2>/dev/null
    [ -s "$shot" ] || { echo "no screenshot was written"; exit 1; }
fi
echo "rendered: chart with $bars bars, timeline with $lines lines ($bot by the bot), no console messages"
