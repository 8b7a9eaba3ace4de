#!/bin/sh
# Instructions per unaddressed message and per answer, counted by callgrind:
# deterministic to about 0.1 %, where the CPU-time figures of the load
# harness (benches/load.rs) vary by 10-20 % with the machine's other tenants.
#
# Runs the load harness three times with the bot under
# `valgrind --tool=callgrind` (AMBIENT_BIN names a wrapper that execs it; the
# harness stops the bot with SIGTERM, so callgrind writes its counts):
#   base:        WARMUP + SMALL unaddressed messages, Q_SMALL questions
#   more chatter: LARGE unaddressed messages instead of SMALL
#   more answers: Q_LARGE questions instead of Q_SMALL
# and prints the differences divided by the messages added: instructions per
# unaddressed message and per answer, with memcpy/memmove counted and
# without (callgrind counts a `rep movsb` copy byte by byte, so the copies
# weigh far more than their time).
#
# The bot counted is the `profiling` build (Cargo.toml): the release profile's
# code with its symbols kept, where the release binary is stripped, so
# callgrind's files name functions. AMBIENT_BIN=path in the environment counts
# that binary instead, driven by a dev build of the harness: to compare two
# builds, name each with AMBIENT_BIN so both are driven alike.
#
# Usage: scripts/instructions.sh [--plain] [--small N] [--large N]
#                                [--q-small N] [--q-large N] [--rate R]
#   --plain  the tests' own small payloads instead of Discord-shaped ones
# Takes a few minutes (callgrind runs the bot about 50 times slower).
set -eu

shape=--shaped
small=200
large=1200
q_small=10
q_large=60
rate=100
warmup=200
while [ $# -gt 0 ]; do
    case "$1" in
        --plain) shape="" ;;
        --small) small="$2"; shift ;;
        --large) large="$2"; shift ;;
        --q-small) q_small="$2"; shift ;;
        --q-large) q_large="$2"; shift ;;
        --rate) rate="$2"; shift ;;
        *) echo "instructions.sh: unknown argument $1 (see the usage at the top of the script)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$large" -le "$small" ] || [ "$q_large" -le "$q_small" ]; then
    echo "instructions.sh: --large must exceed --small and --q-large --q-small" >&2
    exit 2
fi
if [ -n "${AMBIENT_BIN:-}" ] && { [ ! -f "$AMBIENT_BIN" ] || [ ! -x "$AMBIENT_BIN" ]; }; then
    echo "instructions.sh: AMBIENT_BIN=$AMBIENT_BIN is not an executable file (a bot binary; unset it to count the profiling build)" >&2
    exit 2
fi

for tool in valgrind callgrind_annotate; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "instructions.sh: $tool is not installed; on Debian or Ubuntu: sudo apt-get install valgrind" >&2
        exit 2
    fi
done

cd "$(dirname "$0")/.."
# The bot counted is built as the harness builds it: a plain `cargo build
# --profile profiling` unifies other features (no dev-dependencies) and would
# build the bot again. With AMBIENT_BIN the bot is that binary, and the
# harness is a dev build: callgrind counts the bot alone, and building the
# profiling profile again would be a needless fat-LTO build of the bot.
if [ -n "${AMBIENT_BIN:-}" ]; then profile=dev; else profile=profiling; fi
echo "building the load harness ($profile profile)…" >&2
harness="$(cargo bench --locked --profile "$profile" --bench load --no-run --message-format=json |
    sed -n 's/.*"name":"load","src_path".*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)"
if [ -z "$harness" ] || [ ! -x "$harness" ]; then
    echo "instructions.sh: could not find the load harness cargo built" >&2
    exit 1
fi
bin="${AMBIENT_BIN:-$(pwd)/target/profiling/ambient}"
out="$(mktemp -d "${TMPDIR:-/tmp}/ambient-instructions.XXXXXX")"
cat >"$out/wrapper" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.%p" "$bin" "\$@"
EOF
chmod +x "$out/wrapper"

# One run: its total instructions, and those in memcpy/memmove, as "TOTAL COPIES".
count() {
    run="$1"; messages="$2"; questions="$3"
    mkdir -p "$out/$run"
    echo "run $run: $messages unaddressed, $questions questions…" >&2
    AMBIENT_BIN="$out/wrapper" "$harness" --bench \
        --guilds 1 --channels 2 --rate "$rate" --warmup "$warmup" --messages "$messages" \
        --burst 0 --addressed "$questions" --hello-every 0 $shape >"$out/$run/harness.txt" 2>&1 || {
        echo "instructions.sh: the load harness failed; its output is in $out/$run/harness.txt" >&2
        exit 1
    }
    if ! grep -q "stored *$((warmup + messages + questions)) of" "$out/$run/harness.txt" ||
        ! grep -q "answered: true" "$out/$run/harness.txt"; then
        echo "instructions.sh: not every message was stored and answered in run $run (see $out/$run/harness.txt)" >&2
        exit 1
    fi
    file="$(ls -t "$out"/callgrind.* | head -n 1)"
    mv "$file" "$out/$run/callgrind.out"
    total="$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$out/$run/callgrind.out" | head -n 1)"
    copies="$(callgrind_annotate --threshold=100 "$out/$run/callgrind.out" 2>/dev/null |
        grep -E 'mem(cpy|move)' | awk '{ gsub(",", "", $1); s += $1 } END { print s + 0 }')"
    echo "$total $copies"
}

base="$(count base "$small" "$q_small")"
chatter="$(count chatter "$large" "$q_small")"
answers="$(count answers "$small" "$q_large")"

per() { # per(total_a, total_b, count) → (b - a) / count
    echo "$1 $2 $3" | awk '{ printf "%.0f", ($2 - $1) / $3 }'
}
set -- $base; b_total=$1; b_copies=$2
set -- $chatter; c_total=$1; c_copies=$2
set -- $answers; a_total=$1; a_copies=$2
echo "payloads: $( [ -n "$shape" ] && echo "Discord-shaped (--shaped)" || echo "the tests' own (--plain)" )"
echo "instructions per unaddressed message: $(per "$((b_total - b_copies))" "$((c_total - c_copies))" "$((large - small))") without memcpy, $(per "$b_total" "$c_total" "$((large - small))") with it ($small → $large messages)"
echo "instructions per answer:              $(per "$((b_total - b_copies))" "$((a_total - a_copies))" "$((q_large - q_small))") without memcpy, $(per "$b_total" "$a_total" "$((q_large - q_small))") with it ($q_small → $q_large questions)"
echo "callgrind's files and the harness's output: $out"
