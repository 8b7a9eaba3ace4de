#!/usr/bin/env python3
"""Writes a large synthetic DiscordChatExporter export for timing `ambient replay`:
N messages spread over D days across three channels of one server, some of them
addressing the bot (hellos, questions, reminders), some with links.

    python3 scripts/replay-bench.py 10000 14 /tmp/bench
    python3 scripts/replay-bench.py 10000 49 /tmp/meetings --shape meetings --addressing 0.05
    python3 scripts/replay-bench.py 100000 456 /tmp/year --shape meetings --addressing 0.05 --start 2025-06-02
    /usr/bin/time -v target/release/ambient replay /tmp/bench/*.json --format json > /dev/null

Shapes:
- `uniform` (default): messages at random times, day and night, every day.
- `meetings`: how a community that meets talks — two evening meetings a week
  (Tuesday and Thursday, 18:00 UTC, about two hours each) carry nearly all of
  it, in bursts; a few stray messages fall on the days between; most days
  are silent.

`--addressing` is the share of messages that address the bot (default 0.03),
split evenly among hellos, questions and reminders.

The output is the same every run (a fixed seed).
"""
import argparse
import json
import os
import random
from datetime import datetime, timedelta, timezone

parser = argparse.ArgumentParser(description="a synthetic chat export for timing `ambient replay`")
parser.add_argument("count", type=int, help="messages")
parser.add_argument("days", type=float, help="days the export spans")
parser.add_argument("out", help="directory for the export's files")
parser.add_argument("--shape", choices=["uniform", "meetings"], default="uniform")
parser.add_argument("--start", default="2026-03-02",
                    help="the first day, YYYY-MM-DD (a Monday keeps meetings on Tuesdays and Thursdays); "
                         "a long span must start early enough to end before today: replay refuses "
                         "messages from the future")
parser.add_argument("--addressing", type=float, default=0.03,
                    help="share of messages addressing the bot (0-1)")
args = parser.parse_args()
if not 0.0 <= args.addressing <= 1.0:
    parser.error(f"--addressing is {args.addressing}: a share between 0 and 1")
count, days, out = args.count, args.days, args.out

rng = random.Random(7)
BOT = {"id": "1000000000000000001", "name": "ambient", "nickname": None, "isBot": True}
GUILD = {"id": "990000000000000001", "name": "Benchbay", "iconUrl": None}
PEOPLE = [{"id": str(990000000000001000 + i), "name": f"person{i}", "nickname": None, "isBot": False}
          for i in range(40)]
CHANNELS = [{"id": str(990000000000000200 + i), "name": n, "type": "GuildTextChat"}
            for i, n in enumerate(["general", "links", "offtopic"])]
WORDS = ("the tide the harbour coffee build release test lunch weekend rain garden bread music "
         "train late early tomorrow meeting bug fixed broken shipped idea plan").split()
start = datetime.strptime(args.start, "%Y-%m-%d").replace(hour=8, tzinfo=timezone.utc)
span = timedelta(days=days).total_seconds()


def uniform_times():
    return sorted(rng.uniform(0, span) for _ in range(count))


def meeting_times():
    """Seconds from `start`: 95 % in the meetings, 5 % on about a third of the other days."""
    meetings, stray_days = [], []
    day = 0
    while day < days:
        weekday = (start + timedelta(days=day)).weekday()
        # Seconds from start (08:00 on day 0) to midnight of that day.
        midnight = day * 86_400 - 8 * 3_600
        if weekday in (1, 3):  # Tuesday, Thursday, 18:00 UTC
            begin = midnight + 18 * 3_600
            length = rng.uniform(1.5, 2.5) * 3_600
            if begin + length <= span:
                meetings.append((begin, length))
        elif rng.random() < 0.3 and midnight + 22 * 3_600 <= span:
            stray_days.append(midnight)
        day += 1
    if not meetings:
        return uniform_times()
    times = []
    for _ in range(count):
        if rng.random() < 0.95 or not stray_days:
            begin, length = rng.choice(meetings)
            times.append(begin + rng.uniform(0, length))
        else:
            # A few words between meetings, in the daytime.
            times.append(rng.choice(stray_days) + rng.uniform(9 * 3_600, 22 * 3_600))
    return sorted(times)


times = meeting_times() if args.shape == "meetings" else uniform_times()
share = args.addressing / 3
per_channel = {c["id"]: [] for c in CHANNELS}
for i, t in enumerate(times):
    channel = rng.choices(CHANNELS, weights=[6, 2, 3])[0]
    author = rng.choice(PEOPLE)
    roll = rng.random()
    mentions = []
    if roll < share:
        content, mentions = "<@1000000000000000001> hello", [BOT]
    elif roll < 2 * share:
        content, mentions = "<@1000000000000000001> what do you think about " + rng.choice(WORDS) + "?", [BOT]
    elif roll < 3 * share:
        content, mentions = "<@1000000000000000001> remind me in 10 minutes to check the " + rng.choice(WORDS), [BOT]
    elif roll < 3 * share + 0.03:
        content = "look https://example.com/" + rng.choice(WORDS)
    else:
        content = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
    at = start + timedelta(seconds=t)
    per_channel[channel["id"]].append({
        "id": str(1500000000000000000 + i), "type": "Default",
        "timestamp": at.isoformat(), "timestampEdited": None, "callEndedTimestamp": None,
        "isPinned": False, "content": content, "author": author, "attachments": [], "embeds": [],
        "stickers": [], "reactions": [], "mentions": mentions,
    })
os.makedirs(out, exist_ok=True)
for c in CHANNELS:
    with open(os.path.join(out, f"bench-{c['name']}.json"), "w") as f:
        json.dump({"guild": GUILD, "channel": {**c, "categoryId": None, "category": None, "topic": None},
                   "dateRange": {"after": None, "before": None}, "messages": per_channel[c["id"]],
                   "messageCount": len(per_channel[c["id"]])}, f)
