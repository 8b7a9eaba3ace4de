#!/usr/bin/env bash
# Checks a replay report page (ambient replay --html PAGE) in headless Chromium:
# the page loads, the chart and the timeline render, the browser logs no
# console message, and the bot can be seen: every shape the chart draws for
# the bot (its bars and a mark per act) measures at least 2×2 CSS pixels in a
# 1280-pixel-wide window, and every mark links to a line of the timeline.
# With a second argument, saves a screenshot.
#
#   scripts/replay-html-check.sh PAGE.html [SCREENSHOT.png]
#
# The page runs no script and must not; the sizes are measured in a copy of
# it with a small probe appended, which writes what it measured into the
# page for --dump-dom to print. Prints what it saw; exits 1 when something
# is missing or too small, 77 (skipped) when Chromium is not installed
# (Debian: apt-get install chromium).
set -euo pipefail

page=$(realpath "$1")
shot=${2:-}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "SKIPPED: chromium not installed (apt-get install chromium)"
    exit 77
fi
if grep -qi '<script' "$page"; then
    echo "the page carries a script; it must run none"
    exit 1
fi
flags=(--headless=new --no-sandbox --disable-gpu --hide-scrollbars --enable-logging=stderr --v=0 --window-size=1280,2000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log="$work/log"
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

# The probe: the rendered size of each of the bot's shapes in the chart, and
# whether each mark's link leads to a line.
probe='<script>
(function () {
  var chart = document.getElementById("posts-per-hour");
  var shapes = chart.querySelectorAll(".bot, .mark");
  var w = Infinity, h = Infinity;
  for (var i = 0; i < shapes.length; i++) {
    var r = shapes[i].getBoundingClientRect();
    w = Math.min(w, r.width);
    h = Math.min(h, r.height);
  }
  var links = chart.querySelectorAll("a.act");
  var unlinked = 0;
  for (var j = 0; j < links.length; j++) {
    var target = (links[j].getAttribute("href") || "").replace(/^#/, "");
    var line = document.getElementById(target);
    if (!line || line.className.indexOf("line bot") !== 0) unlinked++;
  }
  var out = document.createElement("pre");
  out.id = "measured";
  out.textContent = [
    "shapes=" + shapes.length,
    "marks=" + links.length,
    "unlinked=" + unlinked,
    "width=" + (shapes.length ? w.toFixed(2) : 0),
    "height=" + (shapes.length ? h.toFixed(2) : 0)
  ].join(" ") + " ";
  document.body.appendChild(out);
})();
</script>'
{ cat "$page"; printf '%s\n' "$probe"; } >"$work/probed.html"
measured=$("$browser" "${flags[@]}" --dump-dom "file://$work/probed.html" 2>/dev/null | grep -o '<pre id="measured">[^<]*' || true)
if [ -z "$measured" ]; then
    echo "the probe measured nothing: Chromium did not run it"
    exit 1
fi
measured=${measured#*>}
field() { grep -o " $1=[0-9.]*" <<<" $measured" | cut -d= -f2; }
shapes=$(field shapes)
marks=$(field marks)
unlinked=$(field unlinked)
width=$(field width)
height=$(field height)
if awk -v w="$width" -v h="$height" -v n="$shapes" 'BEGIN { exit !(n > 0 && (w < 2 || h < 2)) }'; then
    echo "the bot's smallest shape in the chart is ${width}×${height} px, too small to see (at least 2×2)"
    exit 1
fi
if [ "$bot" -gt 0 ] && [ "$shapes" -eq 0 ]; then
    echo "the timeline has $bot lines by the bot, but the chart draws nothing for it"
    exit 1
fi
if [ "$marks" -ne "$bot" ]; then
    echo "the chart marks $marks acts, the timeline has $bot lines by the bot"
    exit 1
fi
if [ "$unlinked" -ne 0 ]; then
    echo "$unlinked of the chart's $marks marks link to no line of the bot"
    exit 1
fi
if [ -n "$shot" ]; then
    "$browser" "${flags[@]}" --screenshot="$shot" "file://$page" 2>/dev/null
    [ -s "$shot" ] || { echo "no screenshot was written"; exit 1; }
fi
echo "rendered: chart with $bars bars, timeline with $lines lines ($bot by the bot), no console messages"
echo "the bot in the chart: $shapes shapes ($marks marks, each linking to its line), the smallest ${width}×${height} px"
