#!/usr/bin/env python3
"""Writes a large synthetic DiscordChatExporter export for timing `ambient replay`:
N messages spread over D days across three channels of one server, about 3% of
them addressing the bot (hellos, questions, reminders), some with links.

    python3 scripts/replay-bench.py 10000 14 /tmp/bench
    /usr/bin/time -v target/release/ambient replay /tmp/bench/*.json --format json > /dev/null

The output is the same every run (a fixed seed).
"""
import json
import os
import random
import sys
from datetime import datetime, timedelta, timezone

count, days, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
rng = random.Random(7)
BOT = {"id": "1000000000000000001", "name": "ambient", "nickname": None, "isBot": True}
GUILD = {"id": "990000000000000001", "name": "Benchbay", "iconUrl": None}
PEOPLE = [{"id": str(990000000000001000 + i), "name": f"person{i}", "nickname": None, "isBot": False}
          for i in range(40)]
CHANNELS = [{"id": str(990000000000000200 + i), "name": n, "type": "GuildTextChat"}
            for i, n in enumerate(["general", "links", "offtopic"])]
WORDS = ("the tide the harbour coffee build release test lunch weekend rain garden bread music "
         "train late early tomorrow meeting bug fixed broken shipped idea plan").split()
start = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
span = timedelta(days=days).total_seconds()
times = sorted(rng.uniform(0, span) for _ in range(count))
per_channel = {c["id"]: [] for c in CHANNELS}
for i, t in enumerate(times):
    channel = rng.choices(CHANNELS, weights=[6, 2, 3])[0]
    author = rng.choice(PEOPLE)
    roll = rng.random()
    mentions = []
    if roll < 0.01:
        content, mentions = "<@1000000000000000001> hello", [BOT]
    elif roll < 0.02:
        content, mentions = "<@1000000000000000001> what do you think about " + rng.choice(WORDS) + "?", [BOT]
    elif roll < 0.03:
        content, mentions = "<@1000000000000000001> remind me in 10 minutes to check the " + rng.choice(WORDS), [BOT]
    elif roll < 0.06:
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
