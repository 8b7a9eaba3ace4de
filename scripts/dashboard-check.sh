#!/usr/bin/env bash
# Checks a running dashboard (ambient dashboard) in headless Chromium: each
# page loads, the spend chart's SVG and the timeline's entries render, and the
# browser logs no console message (a script error or a blocked resource, such
# as anything the pages' Content-Security-Policy refuses). Saves a screenshot
# of each page into OUT_DIR.
#
#   scripts/dashboard-check.sh BASE_URL OUT_DIR
#
# BASE_URL is the dashboard's address (http://127.0.0.1:8377/); a dashboard
# beyond loopback needs its token, which this check does not send. Prints what
# it saw; exits 1 when something is missing, 77 (skipped) when Chromium is not
# installed (Debian: apt-get install chromium).
set -euo pipefail

base=${1%/}
out=$2
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "SKIPPED: chromium not installed (apt-get install chromium)"
    exit 77
fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Occurrences of $1 in $2 (none is 0, not a failure).
count() { { grep -o "$1" <<<"$2" || true; } | wc -l; }

# One fresh profile per run, nothing fetched but the page itself.
chrome() {
    local profile
    profile=$(mktemp -d "$work/profile.XXXXXX")
    "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
        --hide-scrollbars --enable-logging=stderr --v=0 "$@"
}

failed=0
for page in today spend initiative memory; do
    path="/$page"
    [ "$page" = today ] && path="/"
    log="$work/$page.log"
    dom=$(chrome --dump-dom "$base$path" 2>"$log")
    if grep -q 'CONSOLE' "$log"; then
        echo "$page: the browser logged console messages:"
        grep 'CONSOLE' "$log"
        failed=1
    fi
    case "$page" in
        today)
            entries=$(count 'class="entry k-' "$dom")
            if [ "$entries" -eq 0 ]; then echo "today: the timeline rendered no entry"; failed=1; fi
            echo "today: timeline with $entries entries"
            ;;
        spend)
            if ! grep -q '<svg class="chart" id="tokens-per-day"' <<<"$dom"; then
                echo "spend: the tokens-per-day chart is not in the rendered page"; failed=1
            fi
            bars=$(count '<rect class="role-[a-z]*" x=' "$dom")
            echo "spend: charts with $bars bars"
            ;;
        initiative)
            servers=$(count '<section class="card" id="guild-' "$dom")
            echo "initiative: $servers servers"
            ;;
        memory)
            facts=$(count '<tr class="fact"' "$dom")
            echo "memory: $facts memories"
            ;;
    esac
    chrome --window-size=1280,1100 --screenshot="$out/dashboard-$page.png" "$base$path" 2>/dev/null
    if [ ! -s "$out/dashboard-$page.png" ]; then echo "$page: no screenshot was written"; failed=1; fi
done
[ "$failed" -eq 0 ] || exit 1
echo "no console messages; screenshots in $out"
