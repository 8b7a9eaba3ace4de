#!/usr/bin/env python3
"""Writes the shipped replay sample: examples/replay/sample-*.json (DiscordChatExporter
JSON, one file per channel of the server "Tidepool") and examples/replay/sample.jsonl.

Run from the repository root: python3 scripts/replay-sample.py
The output is the same every run (a fixed seed), so the tests' figures hold.
"""
import json
import random
from datetime import datetime, timedelta, timezone

rng = random.Random(20261123)
BOT = {"id": "1000000000000000001", "name": "ambient", "nickname": None, "isBot": True}
GUILD = {"id": "880000000000000001", "name": "Tidepool", "iconUrl": None}
PEOPLE = {
    "maya": ("880000000000001001", "maya_k", "Maya"),
    "jonas": ("880000000000001002", "jonas.b", None),
    "priya": ("880000000000001003", "priyasays", "Priya"),
    "dev": ("880000000000001004", "devon", None),
    "lou": ("880000000000001005", "lou_lou", "Lou"),
    "sam": ("880000000000001006", "samwise", None),
}

# Conversations: (channel, [(who, text)]). "@bot" becomes a mention of the bot.
GENERAL = [
    [("maya", "morning all"), ("jonas", "morning! coffee #2 already"), ("priya", "same. the 8am standup is a crime"),
     ("maya", "@bot hello"), ("dev", "did anyone finish the tide chart thing?"), ("maya", "almost, the low tides are off by an hour"),
     ("dev", "daylight saving again probably"), ("maya", "ugh yes that's it")],
    [("lou", "anyone going to the harbour market saturday?"), ("sam", "if it doesn't rain"), ("lou", "forecast says clear"),
     ("sam", "then yes, I need more of that smoked salt"), ("priya", "bring me some please"), ("sam", "deal")],
    [("jonas", "@bot what's a good name for a sourdough starter?"), ("priya", "Clint Yeastwood is taken by everyone"),
     ("jonas", "I had Bread Pitt but it died"), ("lou", "rip Bread Pitt"), ("jonas", "he was a good starter")],
    [("dev", "I moved the backup job to run at 3am, tell me if the share feels slow in the morning"),
     ("maya", "will do"), ("dev", "@bot remind me in 10 minutes to check the backup log"), ("dev", "thanks")],
    [("priya", "reading group: we're on chapter 6 of The Overstory"), ("lou", "I'm still on 4, no spoilers"),
     ("priya", "ok ok. the trees are doing tree things"), ("lou", "perfect, vague enough"),
     ("sam", "I gave up on it, too many characters"), ("priya", "it's worth it after the first part I promise")],
    [("maya", "@bot what did you do today?"), ("jonas", "lol asking the bot for its diary"),
     ("maya", "it keeps a journal, it's honestly interesting")],
    [("sam", "power is out on the east side"), ("lou", "here too"), ("sam", "ok back now"), ("lou", "fridge survived")],
    [("jonas", "who's up for board games thursday"), ("dev", "me"), ("priya", "me if it's not Twilight Imperium again"),
     ("jonas", "it is a little bit Twilight Imperium"), ("priya", "then I'm bringing snacks and leaving at 11"),
     ("jonas", "fair")],
    [("lou", "@bot do you think it's going to rain on saturday?"), ("sam", "the bot doesn't have a window lou"),
     ("lou", "it has the internet, that's a window")],
    [("priya", "my plant is finally flowering"), ("maya", "the one you almost killed in march?"),
     ("priya", "the very one. redemption arc"), ("dev", "photos or it didn't happen"), ("priya", "later, it's dark now")],
    [("dev", "backup log looks fine btw"), ("maya", "share was fast this morning"), ("dev", "good, keeping the 3am slot")],
    [("maya", "I'm trying to decide between the blue and the green tiles for the bathroom"),
     ("lou", "green. blue bathrooms feel like a swimming pool"), ("jonas", "blue. green looks like a hospital"),
     ("maya", "you two are useless"), ("sam", "terracotta"), ("maya", "that's not even an option sam")],
    [("jonas", "@bot thanks for the reminder earlier btw"), ("dev", "it reminded me too, it works")],
    [("sam", "anyone know a good bike repair place near the station?"), ("lou", "Spoke & Sprocket, ask for Ana"),
     ("sam", "thanks!")],
]
LINKS = [
    [("dev", "this is a good read on tide prediction http://example.com/tides/harmonics"),
     ("maya", "oh nice, that explains the hour offset")],
    [("priya", "recipe for the lemon cake from last week http://example.com/recipes/lemon-drizzle"),
     ("lou", "saving this")],
    [("jonas", "new board game review http://example.com/games/twilight-imperium-4"), ("priya", "no")],
    [("sam", "the market has a site now http://example.com/harbour-market"), ("sam", "opening hours are on it")],
    [("lou", "@bot have you seen this? http://example.com/science/octopus-dreams"),
     ("maya", "octopuses dreaming is my favourite fact this year")],
    [("dev", "firmware update for the nas http://example.com/nas/firmware-7-2"), ("dev", "applying tonight")],
    [("maya", "tile inspiration http://example.com/interiors/green-bathrooms"), ("jonas", "still hospital")],
]


def snowflake(timestamp, seq):
    """A Discord id for a message at `timestamp`: time-ordered, as Discord's are."""
    ms = int(datetime.fromisoformat(timestamp).timestamp() * 1000) - 1_420_070_400_000
    return (ms << 22) | (seq & 0xFFF)


def author(who):
    if who == "bot":
        return BOT
    pid, name, nick = PEOPLE[who]
    return {"id": pid, "name": name, "discriminator": "0000", "nickname": nick, "color": None,
            "isBot": False, "roles": [], "avatarUrl": "https://cdn.discordapp.com/embed/avatars/0.png"}


def channel(cid, name):
    return {"id": cid, "type": "GuildTextChat", "categoryId": "880000000000000100", "category": "Chat",
            "name": name, "topic": None}


def day_times(start, n):
    """n times within one day's waking hours (09:00–23:30), clustered into conversations."""
    return sorted(start + timedelta(minutes=rng.randint(9 * 60, 23 * 60 + 30)) for _ in range(n))


def build(channel_id, name, conversations, start, days):
    messages = []
    for day in range(days):
        day_start = start + timedelta(days=day)
        picked = [rng.choice(conversations) for _ in range(len(conversations) * 2 // 3 + 1)]
        for begin in day_times(day_start, len(picked)):
            at = begin
            convo = picked.pop()
            for who, text in convo:
                at += timedelta(seconds=rng.randint(20, 240))
                mentions = []
                if "@bot" in text:
                    text = text.replace("@bot", "<@" + BOT["id"] + ">")
                    mentions.append(BOT)
                messages.append({
                    "type": "Default",
                    "timestamp": at.isoformat(timespec="milliseconds"), "timestampEdited": None,
                    "callEndedTimestamp": None, "isPinned": False, "content": text,
                    "author": author(who), "attachments": [], "embeds": [], "stickers": [],
                    "reactions": [], "mentions": mentions,
                })
    messages.sort(key=lambda m: m["timestamp"])
    # A newcomer joins on the second morning: not conversation, skipped by replay.
    join_at = (start + timedelta(days=1, hours=8, minutes=12)).isoformat(timespec="milliseconds")
    if name == "general":
        messages.append({"type": "GuildMemberJoin", "timestamp": join_at,
                         "timestampEdited": None, "callEndedTimestamp": None, "isPinned": False,
                         "content": "", "author": author("sam"), "attachments": [], "embeds": [],
                         "stickers": [], "reactions": [], "mentions": []})
        messages.sort(key=lambda m: m["timestamp"])
    # Ids are time-ordered, as Discord's are; DiscordChatExporter writes "id" first.
    messages = [{"id": str(snowflake(m["timestamp"], seq)), **m} for seq, m in enumerate(messages)]
    return {
        "guild": GUILD, "channel": channel(channel_id, name),
        "dateRange": {"after": None, "before": None},
        "exportedAt": (start + timedelta(days=days)).isoformat(),
        "messages": messages, "messageCount": len(messages),
    }


def main():
    start = datetime(2026, 5, 4, tzinfo=timezone(timedelta(hours=2)))
    for cid, name, convos in [("880000000000000201", "general", GENERAL),
                              ("880000000000000202", "links", LINKS)]:
        export = build(cid, name, convos, start, days=5)
        with open(f"examples/replay/sample-{name}.json", "w") as f:
            json.dump(export, f, indent=2, ensure_ascii=False)
            f.write("\n")
    lines = []
    t = datetime(2026, 5, 4, 18, 0, tzinfo=timezone.utc)
    for who, text in GENERAL[0] + GENERAL[3] + GENERAL[5]:
        t += timedelta(minutes=rng.randint(1, 6))
        lines.append({"ts": t.strftime("%Y-%m-%dT%H:%M:%SZ"), "channel": "general",
                      "author": who, "content": text.replace("@bot", "@ambient")})
    with open("examples/replay/sample.jsonl", "w") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
