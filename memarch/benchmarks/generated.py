"""The embedded default benchmark: seeded multi-session dialogues between personas, built so that
memory design matters — facts that change (knowledge updates: recency vs. history), dated events in
relative phrasing (temporal), facts to combine (multi-hop), questions about things never said
(adversarial), paraphrased questions (dense beats lexical) and look-alike distractor chatter about
third parties (punishes noisy retrieval). Every question carries its gold evidence turn ids."""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

from memarch.benchmarks.base import Benchmark, Dialogue, Question
from memarch.pipeline.episodes import Episode, Turn

NAMES = ["Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Keiko",
         "Luca", "Maya", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tamara", "Umar", "Vera",
         "Wes", "Ximena", "Yusuf", "Zoe"]
PARTNERS = ["Sam", "Robin", "Alex", "Jordan", "Casey", "Morgan", "Riley", "Taylor", "Jamie", "Avery"]
THIRD_PARTIES = ["my cousin", "my neighbour", "my coworker", "my old roommate", "my brother", "a friend of mine"]
JOBS = ["nurse", "architect", "pastry chef", "data analyst", "firefighter", "librarian", "pilot",
        "dentist", "journalist", "electrician", "veterinarian", "accountant", "photographer", "plumber"]
COMPANIES = ["Brightwell", "Northwind", "Acme Labs", "Bluefin", "Cedar Health", "Orbit Media", "Granite Bank"]
CITIES = ["Lisbon", "Denver", "Osaka", "Toronto", "Nairobi", "Melbourne", "Krakow", "Seville", "Portland",
          "Edinburgh", "Montreal", "Valencia", "Tucson", "Bergen"]
PETS = [("beagle", "dog"), ("tabby", "cat"), ("parrot", "bird"), ("hamster", "rodent"), ("corgi", "dog"),
        ("tortoise", "reptile"), ("ferret", "ferret"), ("goldfish", "fish")]
PET_NAMES = ["Biscuit", "Pepper", "Mango", "Ziggy", "Nutmeg", "Pickles", "Waffles", "Juniper", "Olive"]
HOBBIES = ["rock climbing", "pottery", "birdwatching", "salsa dancing", "woodworking", "kayaking",
           "chess", "knitting", "astronomy", "gardening"]
FOODS = ["ramen", "lasagna", "paella", "tacos", "pierogi", "curry", "dumplings", "risotto"]
INSTRUMENTS = ["cello", "saxophone", "banjo", "harmonica", "trumpet", "ukulele", "violin", "accordion"]
EVENTS = [("ran a half marathon", "run a half marathon"), ("went to a pottery workshop", "go to a pottery workshop"),
          ("visited my grandmother", "visit their grandmother"), ("saw a jazz concert", "see a jazz concert"),
          ("painted a sunrise", "paint a sunrise"), ("went camping by the lake", "go camping by the lake"),
          ("volunteered at the food bank", "volunteer at the food bank"),
          ("baked a wedding cake", "bake a wedding cake"), ("hiked up Mount Hood", "hike up Mount Hood")]
# Relative phrasing -> days before the session date (resolved on the session's weekday).
RELATIVE = ["yesterday", "two days ago", "three days ago", "last Saturday", "last Sunday", "last Friday"]
NEVER_SAID = [("What is the name of {x}'s sailboat?", "sailboat"),
              ("Which university did {x} graduate from?", "university"),
              ("What colour is {x}'s motorbike?", "motorbike"),
              ("How many siblings does {x} have?", "siblings"),
              ("What is {x}'s favourite football team?", "football")]
# Third parties (distractors) draw from their own vocabularies: a look-alike turn must cost budget,
# never supply a persona's answer by chance (that would inflate recall for noisy retrieval).
OTHER_JOBS = ["welder", "tax advisor", "lifeguard", "surveyor", "barista", "locksmith", "translator"]
OTHER_CITIES = ["Boise", "Gdansk", "Porto", "Halifax", "Leipzig", "Cork", "Tampere"]
OTHER_PETS = ["poodle", "gecko", "cockatiel", "rabbit", "dalmatian"]
OTHER_PET_NAMES = ["Rusty", "Clover", "Bean", "Ginger", "Pixel"]
OTHER_HOBBIES = ["fencing", "origami", "archery", "beekeeping", "curling"]
OTHER_INSTRUMENTS = ["tuba", "bagpipes", "oboe", "mandolin", "xylophone"]
OTHER_EVENTS = ["went bowling", "toured a brewery", "ran a bake sale", "went to a comedy show",
                "repainted the garage"]
CHATTER = ["The weather has been awful, rain all week.", "Did you watch the game on Sunday?",
           "I really need a vacation soon.", "Traffic this morning was unbelievable.",
           "I've been trying to drink more water lately.", "My phone battery dies so fast these days.",
           "Have you tried that new coffee place downtown?", "I can't believe how fast this year is going."]
REACTIONS = ["Wow, that's great news!", "Oh nice, tell me more sometime.", "That sounds amazing.",
             "Ha, I love that.", "Good for you!", "No way, really?"]


def human_date(d: dt.date) -> str:
    return f"{d.day} {d.strftime('%B')} {d.year}"


def days_back(phrase: str, day: dt.date) -> int:
    weekdays = {"last Saturday": 5, "last Sunday": 6, "last Friday": 4}
    if phrase in weekdays:
        return (day.weekday() - weekdays[phrase]) % 7 or 7
    return {"yesterday": 1, "two days ago": 2, "three days ago": 3}[phrase]


@dataclass
class _Say:
    """A planned turn: who says it, in which session, and the questions it is gold evidence for."""

    session: int
    speaker: str
    text: str
    tags: list[str] = field(default_factory=list)
    turn_id: str = ""


class _Planner:
    """Plans one conversation: statements per session, then questions pointing at their turns."""

    def __init__(self, rng: random.Random, people: tuple[str, str], sessions: int):
        self.rng, self.people, self.sessions = rng, people, sessions
        self.says: list[_Say] = []
        self.pets: list[tuple[str, str]] = []  # (species, tag) per person, for the joint question
        self.questions: list[tuple[str, str, str | None, list[str], str, dict]] = []  # category, text, answer, tags, id, meta
        self._n = 0

    def say(self, session: int, speaker: str, text: str) -> str:
        tag = f"t{len(self.says)}"
        self.says.append(_Say(session, speaker, text, [tag]))
        return tag

    def ask(self, category: str, text: str, answer: str | None, tags: list[str], **meta: Any) -> None:
        self._n += 1
        self.questions.append((category, text, answer, tags, f"q{self._n}", meta))

    def late(self, after: int) -> int:
        return self.rng.randint(min(after + 1, self.sessions - 1), self.sessions - 1)

    def plan_person(self, x: str) -> None:
        r = self.rng
        last = self.sessions - 1
        # Knowledge updates: job and city change one or two times; "now" and "before" questions.
        for attr, values, say_first, say_update, q_now, q_before in (
            ("job", r.sample(JOBS, 3), "I work as {a} {v} at {c}, it keeps me busy.",
             "Big news: {c} hired me as {a} {v}, I start on Monday!",
             "What is {x}'s current occupation?", "What did {x} do for a living before becoming {a} {v}?"),
            ("city", r.sample(CITIES, 3), "I'm living in {v} at the moment, near the old harbour.",
             "We finally moved to {v}, the apartment is tiny but I love it.",
             "In which city is {x} based these days?", "Where did {x} live before settling in {v}?"),
        ):
            changes = r.randint(1, 2)
            points = sorted(r.sample(range(1, last + 1), changes)) if last >= changes else list(range(changes))
            tags = [self.say(0, x, say_first.format(v=values[0], a=_a(values[0]), c=r.choice(COMPANIES)))]
            for i, s in enumerate(points, 1):
                tags.append(self.say(min(s, last), x, say_update.format(v=values[i], a=_a(values[i]),
                                                                       c=r.choice(COMPANIES))))
            self.ask("knowledge-update", q_now.format(x=x), values[changes], [tags[-1]])
            self.ask("knowledge-update", q_before.format(x=x, v=values[changes], a=_a(values[changes])),
                     values[changes - 1],
                     [tags[-2], tags[-1]])
        # Single-hop facts, asked in other words than they were said.
        species, kind = r.choice(PETS)
        pet = r.choice(PET_NAMES)
        hobby, food = r.choice(HOBBIES), r.choice(FOODS)
        t_pet = self.say(r.randint(0, last), x, f"I adopted a little {species} and named it {pet}!")
        self.ask("single-hop", f"What breed or species is {x}'s {kind}?", species, [t_pet])
        self.ask("single-hop", f"What is {x}'s {kind} called?", pet, [t_pet])
        t_hobby = self.say(r.randint(0, last), x, f"I've gotten really into {hobby}, I do it every weekend.")
        self.ask("single-hop", f"What pastime fills {x}'s weekends?", hobby, [t_hobby])
        t_food = self.say(r.randint(0, last), x, f"Nothing beats a bowl of {food}, it's my comfort meal.")
        self.ask("single-hop", f"Which dish does {x} turn to for comfort?", food, [t_food])
        # Multi-hop: the partner is named in one turn, their instrument in a later one that never
        # mentions the relation — a retriever must connect "partner" to the name.
        partner, instrument = r.choice(PARTNERS), r.choice(INSTRUMENTS)
        s_partner = r.randint(0, max(0, last - 1))
        t_partner = self.say(s_partner, x, f"My partner {partner} surprised me with dinner last night.")
        t_instr = self.say(self.late(s_partner), x,
                           f"{partner} has been practising the {instrument} every evening, the neighbours must love it.")
        self.ask("single-hop", f"What is the name of {x}'s partner?", partner, [t_partner])
        self.ask("multi-hop", f"Which instrument does {x}'s partner play?", instrument, [t_partner, t_instr])
        self.pets.append((species, t_pet))
        # Dated events, phrased relative to the session date.
        for past, base in r.sample(EVENTS, 2):
            s = r.randint(0, last)
            phrase = r.choice(RELATIVE)
            tag = self.say(s, x, f"I {past} {phrase}, still thinking about it.")
            self.ask("temporal", f"When did {x} {base}?", None, [tag],
                     relative=phrase)
        for question, topic in r.sample(NEVER_SAID, 1):
            self.ask("adversarial", question.format(x=x), None, [], never_said=topic)

    def plan(self) -> None:
        for x in self.people:
            self.plan_person(x)
        (sa, ta), (sb, tb) = self.pets
        self.ask("multi-hop", f"What animals do {self.people[0]} and {self.people[1]} keep as pets?",
                 f"{sa}, {sb}", [ta, tb])


def _a(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


def _distractor(rng: random.Random) -> str:
    who = rng.choice(THIRD_PARTIES)
    return rng.choice([
        f"By the way, {who} just got hired at {rng.choice(COMPANIES)} as their new {rng.choice(OTHER_JOBS)}.",
        f"Oh, and {who} finally moved to {rng.choice(OTHER_CITIES)}, can you believe it?",
        f"{who.capitalize()} adopted a {rng.choice(OTHER_PETS)} named {rng.choice(OTHER_PET_NAMES)}.",
        f"{who.capitalize()} keeps inviting me to try {rng.choice(OTHER_HOBBIES)} with them.",
        f"{who.capitalize()} has been learning the {rng.choice(OTHER_INSTRUMENTS)}, it's hilarious.",
        f"{who.capitalize()} {rng.choice(OTHER_EVENTS)} {rng.choice(RELATIVE)}.",
        rng.choice(CHATTER),
    ])


class GeneratedConversations(Benchmark):
    """Seeded multi-session dialogues between personas (no external data).

    Example::

        bench = GeneratedConversations(seed=0, conversations=6, sessions=8, distractors=6)
        bench.stats()   # categories: single-hop, multi-hop, temporal, knowledge-update, adversarial

    Args:
        seed: generation seed (also the split seed unless ``split_seed`` is given).
        conversations: dialogues (one namespace each).
        sessions: sessions per dialogue (>= 2).
        distractors: look-alike chatter turns per session (third parties' jobs, cities, pets...).
        start: date of the first session (ISO); sessions are 3-9 days apart.
    """

    name = "generated"
    categories = ("single-hop", "multi-hop", "temporal", "knowledge-update", "adversarial")

    def __init__(self, *, seed: int = 0, conversations: int = 6, sessions: int = 8, distractors: int = 6,
                 start: str = "2023-05-08", split_seed: int | None = None, data: Any = None, **split_options: Any):
        if sessions < 2 or conversations < 1 or distractors < 0:
            raise ValueError("need sessions >= 2, conversations >= 1, distractors >= 0")
        self.knobs = {"seed": seed, "conversations": conversations, "sessions": sessions,
                      "distractors": distractors, "start": start}
        first = dt.date.fromisoformat(start)
        dialogues = [self._dialogue(seed, i, first, sessions, distractors) for i in range(conversations)]
        super().__init__(dialogues, seed=seed if split_seed is None else split_seed, **split_options)

    def _dialogue(self, seed: int, index: int, first: dt.date, sessions: int, distractors: int) -> Dialogue:
        # Separate streams: the facts of a dialogue do not change when only the noise knob does.
        rng = random.Random(f"{seed}:facts:{index}")
        noise = random.Random(f"{seed}:noise:{index}")
        people = tuple(rng.sample(NAMES, 2))
        ns = f"gen-{index}"
        planner = _Planner(rng, people, sessions)
        planner.plan()
        dates, day = [], first + dt.timedelta(days=rng.randint(0, 30))
        for _ in range(sessions):
            dates.append(day)
            day += dt.timedelta(days=rng.randint(3, 9))
        episodes, tag_turn, tag_date = [], {}, {}
        for s in range(sessions):
            lines: list[tuple[str, str, list[str]]] = [(people[0], f"Hi {people[1]}! How have you been?", []),
                                                        (people[1], "Pretty good! Lots going on.", [])]
            planned = [p for p in planner.says if p.session == s]
            chatter = [(noise.choice(people), _distractor(noise), []) for _ in range(distractors)]
            body = [(p.speaker, p.text, p.tags) for p in planned] + chatter
            noise.shuffle(body)
            for speaker, text, tags in body:
                lines.append((speaker, text, tags))
                if tags:  # the other persona reacts: realistic, and content-free noise
                    lines.append((people[1] if speaker == people[0] else people[0], noise.choice(REACTIONS), []))
            lines.append((people[1], "Talk soon, take care!", []))
            turns = []
            for j, (speaker, text, tags) in enumerate(lines, 1):
                tid = f"D{s + 1}:{j}"
                turns.append(Turn(id=tid, speaker=speaker, text=text, date=dates[s].isoformat()))
                for tag in tags:
                    tag_turn[tag], tag_date[tag] = tid, dates[s]
            episodes.append(Episode(id=f"{ns}/session_{s + 1}", turns=turns, namespace=ns,
                                    time=f"{dates[s].isoformat()}T{9 + (s * 5 + index) % 11:02d}:00",
                                    metadata={"session": s + 1}))
        questions = []
        for category, text, answer, tags, qid, meta in planner.questions:
            if category == "temporal":  # the answer is the absolute date the relative phrase denotes
                when = tag_date[tags[0]]
                answer = human_date(when - dt.timedelta(days=days_back(meta["relative"], when)))
            questions.append(Question(id=f"{ns}/{qid}", text=text, answer=answer, metadata=meta,
                                      evidence=[tag_turn[t] for t in tags], category=category))
        return Dialogue(namespace=ns, sessions=episodes, questions=questions, metadata={"people": list(people)})
