"""LoCoMo (Maharana et al. 2024): 10 long conversations, 272 sessions, 1,986 questions with gold
evidence turn ids. Loaded from a path (or ``$MEMARCH_DATA_DIR/locomo``); the official file can be
downloaded on request and is checked against its sha256."""
from __future__ import annotations

import hashlib
import logging
import os
import re
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from memarch.benchmarks.base import Benchmark, Dialogue, Question
from memarch.errors import DataError
from memarch.pipeline.episodes import Episode, Turn
from memarch.pipeline.files import atomic_write_bytes, read_json

log = logging.getLogger(__name__)

FILENAME = "locomo10.json"
URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_SESSION = re.compile(r"session_(\d+)")
# Lenient: "D8:6; D9:17" holds two ids, "D:11:26" is D11:26, a bare "D" holds none.
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")


def parse_evidence(raw: Any) -> list[str]:
    """Evidence ids as ``D<session>:<turn>``, tolerant of separators and stray colons."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for entry in items:
        for s, t in _EVIDENCE.findall(str(entry)):
            eid = f"D{int(s)}:{int(t)}"
            if eid not in out:
                out.append(eid)
    return out


def parse_datetime(text: str) -> str | None:
    """``"1:56 pm on 8 May, 2023"`` -> ``"2023-05-08T13:56"`` (None when unparseable)."""
    cleaned = " ".join(str(text).replace("am", "AM").replace("pm", "PM").split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).strftime("%Y-%m-%dT%H:%M")
        except ValueError:
            continue
    return None


def resolve_path(data: str | os.PathLike | None) -> Path:
    """The LoCoMo file: ``data`` as a file or a directory, else ``$MEMARCH_DATA_DIR/locomo``."""
    if data is None:
        root = os.environ.get("MEMARCH_DATA_DIR")
        if not root:
            raise DataError("locomo: no data path given (pass --data PATH to locomo10.json or its "
                            "directory, or set MEMARCH_DATA_DIR)")
        # the data root (…/locomo/locomo10.json) or, like babi, the dataset directory itself
        data = Path(root) if (Path(root) / FILENAME).exists() else Path(root) / "locomo"
    path = Path(data)
    if path.is_dir():
        nested = path / "locomo" / FILENAME
        return nested if not (path / FILENAME).exists() and nested.exists() else path / FILENAME
    if not path.exists() and path.suffix != ".json":  # a directory still to be filled (--download)
        return path / FILENAME
    return path


def fetch_official(directory: str | os.PathLike, *, url: str = URL, sha256: str = SHA256, timeout: float = 30) -> Path:
    """Fetch the official file into ``directory`` and verify it; raises DataError on any failure."""
    target = Path(directory) / FILENAME
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (fixed https URL)
            blob = resp.read()
    except OSError as exc:
        raise DataError(f"locomo: download from {url} failed ({exc.__class__.__name__}: {exc}); "
                        f"place {FILENAME} under {directory} by hand") from None
    digest = hashlib.sha256(blob).hexdigest()
    if digest != sha256:
        raise DataError(f"locomo: downloaded file has sha256 {digest}, expected {sha256}; not saved")
    atomic_write_bytes(target, blob)
    return target


def _turn_text(raw: dict) -> str:
    text = str(raw.get("text", ""))
    if raw.get("blip_caption"):  # shared photos carry answers ("what did she paint?")
        caption = str(raw["blip_caption"]).strip()
        text += f" [shares {caption}]" if caption.lower().startswith("a photo") else f" [shares a photo of {caption}]"
    return text


def parse_conversation(sample: dict, index: int) -> Dialogue:
    conv = sample["conversation"]
    namespace = str(sample.get("sample_id", f"conv-{index}"))
    sessions: list[Episode] = []
    numbers = sorted(int(m.group(1)) for k, v in conv.items()
                     if (m := _SESSION.fullmatch(k)) and isinstance(v, list))
    for n in numbers:
        when = parse_datetime(conv.get(f"session_{n}_date_time", ""))
        day = when[:10] if when else None
        turns = [Turn(id=str(t["dia_id"]), speaker=str(t["speaker"]), text=_turn_text(t), date=day)
                 for t in conv[f"session_{n}"]]
        sessions.append(Episode(id=f"{namespace}/session_{n}", turns=turns, time=when, namespace=namespace,
                                metadata={"session": n, "date_time": conv.get(f"session_{n}_date_time")}))
    questions = []
    for i, qa in enumerate(sample.get("qa", [])):
        cat = CATEGORIES.get(int(qa["category"]), str(qa["category"]))
        answer = None if cat == "adversarial" else str(qa.get("answer", ""))
        meta = {"locomo_category": int(qa["category"])}
        if "adversarial_answer" in qa:
            meta["adversarial_answer"] = qa["adversarial_answer"]
        questions.append(Question(id=f"{namespace}/q{i}", text=str(qa["question"]), answer=answer,
                                  evidence=parse_evidence(qa.get("evidence", [])), category=cat,
                                  metadata=meta))
    return Dialogue(namespace=namespace, sessions=sessions, questions=questions,
                    metadata={"speakers": [conv.get("speaker_a"), conv.get("speaker_b")]})


class LoCoMo(Benchmark):
    """LoCoMo as a stream benchmark; categories named as in ANCHORS 5.

    Example::

        bench = LoCoMo("../shared/data/locomo")
        bench.stats()["questions"]   # 1986

    Args:
        data: the JSON file or its directory (default ``$MEMARCH_DATA_DIR/locomo``).
        download: fetch the official file into ``data`` first if it is missing (needs the network).
        conversations: keep only the first N conversations (quick runs).
    """

    name = "locomo"
    categories = tuple(CATEGORIES.values())

    def __init__(self, data: str | os.PathLike | None = None, *, download: bool = False,
                 conversations: int | None = None, **split_options: Any):
        path = resolve_path(data)
        if download and not path.exists():
            path = fetch_official(path.parent)
        raw = read_json(path, what="LoCoMo file (a JSON list of conversations, e.g. locomo10.json)")
        if not isinstance(raw, list) or not all(isinstance(s, dict) and "conversation" in s for s in raw):
            raise DataError(f"{path}: not a LoCoMo file (expected a JSON list of objects with "
                            "'conversation' and 'qa')")
        try:
            dialogues = [parse_conversation(s, i) for i, s in enumerate(raw[:conversations])]
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: malformed LoCoMo conversation ({exc.__class__.__name__}: {exc})") from None
        self.path = path
        super().__init__(dialogues, **split_options)
