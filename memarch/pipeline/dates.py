"""Dates in conversations: parse a session date ("1:56 pm on 8 May, 2023", ISO, ...) and resolve
time expressions in a sentence ("yesterday", "last week", "two days ago", "May 7") against it.
Shared by the event encoder and the time-aware retrieval (`memarch.modules.retrievers._aware`).

Pure functions, no LM: the `event` encoder's LM-free path and its tests rely on them.

Example::

    >>> anchor = parse_session_date("1:56 pm on 8 May, 2023")
    >>> resolve_time_expression("I went to a support group yesterday", anchor).date
    datetime.date(2023, 5, 7)
"""
from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from typing import Callable, Literal

Granularity = Literal["day", "weekend", "week", "month", "season", "year"]
Tense = Literal["past", "future"]

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
    "a few": 3, "few": 3, "several": 3,
}
SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_SEASON_NAME = {3: "spring", 6: "summer", 9: "fall", 12: "winter"}

# Month names are matched case-sensitively (capitalised) so that the modal "may" is not a month.
_MONTH_ALT = "|".join(sorted((n for n in calendar.month_name if n), key=len, reverse=True)
                      + [a for a in calendar.month_abbr if a and a != "May"] + ["Sept"])
_MONTH = rf"(?P<month>{_MONTH_ALT})\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR_DIGITS = r"(?:19|20)\d\d"
_YEAR = rf"(?P<year>{_YEAR_DIGITS})"
_NUM = r"(?P<n>\d+|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAY = r"(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"


@dataclass(frozen=True)
class ResolvedDate:
    """A time expression found in a text and the date it denotes (the first day of its period)."""

    date: dt.date
    granularity: Granularity
    phrase: str  # the expression as written, e.g. "last week"
    start: int = 0  # character offsets of the phrase in the text
    end: int = 0

    @property
    def iso(self) -> str:
        return self.date.isoformat()

    def describe(self) -> str:
        """Human-readable period: "7 May 2023", "week of 1 May 2023", "May 2023", "2022"."""
        d = self.date
        if self.granularity == "day":
            return format_date(d)
        if self.granularity in ("week", "weekend"):
            return f"{self.granularity} of {format_date(d)}"
        if self.granularity == "season":
            return f"{_SEASON_NAME[d.month]} {d.year}"
        if self.granularity == "month":
            return f"{calendar.month_name[d.month]} {d.year}"
        return str(d.year)


def format_date(d: dt.date) -> str:
    """LoCoMo-style day: "7 May 2023"."""
    return f"{d.day} {calendar.month_name[d.month]} {d.year}"


# -- session dates -------------------------------------------------------------------------------
_ISO = re.compile(r"(?P<year>\d{4})-(?P<month>\d\d)-(?P<day>\d\d)")
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b")


def parse_session_date(value: str | dt.date | None) -> dt.date | None:
    """The calendar day of a session: ISO date/datetime, "1:56 pm on 8 May, 2023", "May 8, 2023"."""
    if value is None or isinstance(value, dt.date):
        return value.date() if isinstance(value, dt.datetime) else value
    text = str(value).strip()
    for pattern in (_ISO, _DAY_MONTH_YEAR, _MONTH_DAY_YEAR):
        m = pattern.search(text)
        if m:
            month = m.group("month")
            month_no = int(month) if month.isdigit() else MONTHS[month.lower().rstrip(".")]
            try:
                return dt.date(int(m.group("year")), month_no, int(m.group("day")))
            except ValueError:
                continue
    return None


# -- calendar arithmetic -------------------------------------------------------------------------
def add_months(d: dt.date, months: int) -> dt.date:
    """Same day ``months`` later (clamped to the month's length)."""
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    return dt.date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def _previous_weekday(anchor: dt.date, weekday: int) -> dt.date:
    """The latest ``weekday`` strictly before ``anchor``."""
    return anchor - dt.timedelta(days=(anchor.weekday() - weekday - 1) % 7 + 1)


def _next_weekday(anchor: dt.date, weekday: int) -> dt.date:
    """The earliest ``weekday`` strictly after ``anchor``."""
    return anchor + dt.timedelta(days=(weekday - anchor.weekday() - 1) % 7 + 1)


def _this_weekend(anchor: dt.date) -> dt.date:
    """Saturday of the weekend ``anchor`` is in, or of the coming one on a weekday."""
    if anchor.weekday() >= 5:
        return anchor - dt.timedelta(days=anchor.weekday() - 5)
    return _next_weekday(anchor, 5)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else NUMBER_WORDS[word.lower()]


def _month_nearest(anchor: dt.date, month: int, tense: Tense | None, strict: bool = False) -> dt.date:
    """A month named without a year: the closest one in the direction of the tense (``strict``:
    never the anchor's own month, as in "last May" said in May)."""
    if month == anchor.month and not strict:
        return anchor.replace(day=1)
    if tense == "future":
        year = anchor.year if month > anchor.month else anchor.year + 1
    else:
        year = anchor.year if month < anchor.month else anchor.year - 1
    return dt.date(year, month, 1)


# -- the rule table ------------------------------------------------------------------------------
# Each rule: a compiled pattern and a function (match, anchor, tense) -> (date, granularity) | None.
# Order matters: longer, more specific expressions come first so "the day before yesterday" is not
# read as "yesterday".
Rule = tuple[re.Pattern, Callable[[re.Match, dt.date, "Tense | None"], "tuple[dt.date, Granularity] | None"]]


def _explicit(m: re.Match, anchor: dt.date, tense: Tense | None):
    month = MONTHS[m.group("month").lower().rstrip(".")]
    pre = (m.groupdict().get("pre") or "").lower()
    tense = {"last": "past", "since": "past", "next": "future", "until": "future"}.get(pre, tense)
    year = int(m.group("year")) if m.groupdict().get("year") else None
    day = int(m.group("day")) if m.groupdict().get("day") else None
    if day is None:
        d = dt.date(year, month, 1) if year else _month_nearest(anchor, month, tense, pre in ("last", "next"))
        return d, "month"
    if year is None:
        year = anchor.year
        candidate = dt.date(year, month, min(day, calendar.monthrange(year, month)[1]))
        # "May 7" said in January is last year's May in a past-tense sentence, and vice versa.
        if tense != "future" and candidate > anchor + dt.timedelta(days=31):
            year -= 1
        elif tense == "future" and candidate < anchor - dt.timedelta(days=31):
            year += 1
    try:
        return dt.date(year, month, day), "day"
    except ValueError:
        return None


def _ago(m: re.Match, anchor: dt.date, sign: int):
    n, unit = _count(m.group("n")), m.group("unit").lower()
    if unit == "day":
        return anchor + dt.timedelta(days=sign * n), "day"
    if unit == "week":
        return anchor + dt.timedelta(weeks=sign * n), "week"
    if unit == "month":
        return add_months(anchor, sign * n).replace(day=1), "month"
    return dt.date(anchor.year + sign * n, 1, 1), "year"


def _relative_period(m: re.Match, anchor: dt.date, tense: Tense | None):
    which, unit = m.group("which").lower(), m.group("unit").lower()
    step = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[which]
    if unit == "week":
        monday = anchor - dt.timedelta(days=anchor.weekday())
        return monday + dt.timedelta(weeks=step), "week"
    if unit == "weekend":
        this = _this_weekend(anchor)
        if step < 0:  # on a weekday "last weekend" is the one just gone
            return (this - dt.timedelta(days=7)), "weekend"
        return this + dt.timedelta(weeks=step), "weekend"
    if unit == "month":
        return add_months(anchor.replace(day=1), step), "month"
    if unit == "year":
        return dt.date(anchor.year + step, 1, 1), "year"
    start = SEASON_START[unit]
    year = anchor.year + step
    if step == 0 and unit == "winter" and anchor.month <= 2:
        year -= 1  # winter of Jan/Feb began the previous December
    return dt.date(year, start, 1), "season"


def _weekday(m: re.Match, anchor: dt.date, tense: Tense | None):
    which = (m.group("which") or "").lower()
    weekday = WEEKDAYS[m.group("weekday").lower()]
    if which == "last" or (which in ("", "on") and tense != "future"):
        return _previous_weekday(anchor, weekday), "day"
    if which == "next":
        return _next_weekday(anchor, weekday), "day"
    # "this Friday", or a future-tense "on Friday": the coming one (today if it is that day)
    return (anchor if anchor.weekday() == weekday else _next_weekday(anchor, weekday)), "day"


def _the_weekend(m: re.Match, anchor: dt.date, tense: Tense | None):
    this = _this_weekend(anchor)
    if tense == "future" or anchor.weekday() >= 5:
        return this, "weekend"
    return this - dt.timedelta(days=7), "weekend"


def _day_of_month(m: re.Match, anchor: dt.date, tense: Tense | None):
    """"on the 15th": this month's 15th, or the previous (next, in the future tense) month's."""
    day = int(m.group("day"))
    if not 1 <= day <= 31:
        return None
    step = 0
    if tense == "future" and day < anchor.day:
        step = 1
    elif tense != "future" and day > anchor.day:
        step = -1
    first = add_months(anchor.replace(day=1), step)
    return first.replace(day=min(day, calendar.monthrange(first.year, first.month)[1])), "day"


def _fixed(days: int) -> Callable:
    return lambda m, anchor, tense: (anchor + dt.timedelta(days=days), "day")


_I = re.IGNORECASE
RULES: list[Rule] = [
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b"), _explicit),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b(?!:)"), _explicit),
    # A month alone needs a cue word or a year: a bare "May" is usually the modal verb.
    (re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b"), _explicit),
    (re.compile(rf"\b(?P<pre>[Ii]n|[Oo]f|[Ll]ast|[Tt]his|[Nn]ext|[Ss]ince|[Uu]ntil|[Bb]y|[Ee]arly|[Ll]ate|[Mm]id-?)\s+{_MONTH}(?!\s+\d)\b"),
     _explicit),
    (re.compile(r"\b(?:on\s+)?the\s+(?P<day>[0-3]?\d)(?:st|nd|rd|th)\b(?!\s+(?:of|time|anniversary|birthday))", _I),
     _day_of_month),
    (re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b", _I), _fixed(-2)),
    (re.compile(r"\b(?:the\s+)?day\s+after\s+tomorrow\b", _I), _fixed(2)),
    (re.compile(r"\b(?:yesterday|last\s+night)\b", _I), _fixed(-1)),
    (re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", _I), _fixed(0)),
    (re.compile(r"\btomorrow\b", _I), _fixed(1)),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", _I), lambda m, a, t: _ago(m, a, -1)),
    (re.compile(rf"\bin\s+{_NUM}\s+{_UNIT}\b", _I), lambda m, a, t: _ago(m, a, 1)),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+from\s+now\b", _I), lambda m, a, t: _ago(m, a, 1)),
    (re.compile(r"\b(?P<which>last|past|previous|this|next|coming)\s+"
                r"(?P<unit>weekend|week|month|year|spring|summer|fall|autumn|winter)\b", _I), _relative_period),
    (re.compile(rf"\b(?P<which>last|next|this|on)?\s*{_WEEKDAY}\b", _I), _weekday),
    (re.compile(r"\b(?:over|on|during|at)\s+the\s+weekend\b", _I), _the_weekend),
    # A bare number may be a count ("2000 photos"): a year needs a cue word before or a verb after.
    (re.compile(rf"\b(?:(?:[Ii]n|[Ss]ince|[Oo]f|[Bb]y|[Uu]ntil|[Dd]uring|[Ff]rom|[Aa]round|[Ee]arly|[Ll]ate|[Mm]id-?)"
                rf"\s+(?={_YEAR_DIGITS}\b)|(?={_YEAR_DIGITS}\s+(?:was|is|has|will)\b)){_YEAR}"),
     lambda m, a, t: (dt.date(int(m.group("year")), 1, 1), "year")),
]


# Every rule needs one of these words or a digit: most sentences are dismissed by one set lookup.
_CUES = frozenset(
    "yesterday today tonight tomorrow morning afternoon evening night ago now last next this coming past "
    "previous weekend week weeks month months year years day days spring summer fall autumn winter".split()
) | frozenset(MONTHS) | frozenset(WEEKDAYS)
_CUE_WORD = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")


def has_time_cue(text: str) -> bool:
    """Cheap test before the rules run: could ``text`` hold a time expression at all?"""
    return _DIGIT.search(text) is not None or not _CUES.isdisjoint(_CUE_WORD.findall(text.lower()))


def find_time_expressions(text: str, anchor: dt.date | None, tense: Tense | None = None) -> list[ResolvedDate]:
    """Every time expression in ``text`` (non-overlapping, left to right), resolved against
    ``anchor``. Without an anchor nothing can be resolved and the list is empty."""
    if anchor is None or not text or not has_time_cue(text):
        return []
    found: list[ResolvedDate] = []
    taken: list[tuple[int, int]] = []
    for pattern, resolve in RULES:
        for m in pattern.finditer(text):
            start, end = m.span()
            if any(start < e and s < end for s, e in taken):
                continue
            try:
                hit = resolve(m, anchor, tense)
            except (ValueError, KeyError, OverflowError):
                hit = None
            if hit is None:
                continue
            taken.append((start, end))
            found.append(ResolvedDate(hit[0], hit[1], m.group(0).strip(), start, end))
    return sorted(found, key=lambda r: r.start)


def resolve_time_expression(text: str, anchor: dt.date | None, tense: Tense | None = None) -> ResolvedDate | None:
    """The most specific time expression in ``text`` (a day beats a week beats a year), or None."""
    found = find_time_expressions(text, anchor, tense)
    if not found:
        return None
    rank = {"day": 0, "weekend": 1, "week": 2, "month": 3, "season": 4, "year": 5}
    return min(found, key=lambda r: (rank[r.granularity], r.start))
