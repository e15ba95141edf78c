"""Encoders: what memory writes (experience: tip, insight, trajectory, workflow, shortcut;
conversation: turn, summary, fact, entity, event)."""
import importlib
import pkgutil

from memarch.modules.encoders._conversation_lm import session_inputs  # the fine-tuning export's inputs
from memarch.modules.encoders._experience_actions import abstract_actions, instantiate, parse_action  # promotion
from memarch.modules.encoders.base import Encoder
__all__ = ["Encoder", "abstract_actions", "instantiate", "parse_action", "session_inputs"]

# Every module file in this package registers itself on import: adding a module is adding a file.
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name != "base" and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
