"""Retrievers: what memory is read (hybrid, contrastive, cbr_rerank, graph, hyde, mmr, session)."""
import importlib
import pkgutil

from memarch.modules.retrievers._aware import asks_about_present, asks_about_time  # the guided moves read them
from memarch.modules.retrievers._packing import PACKING  # texts_ahead bounds a read by pack_pool
from memarch.modules.retrievers._sentences import split_sentences  # what the sentence packer embeds
from memarch.modules.retrievers.base import Retriever, eligible
__all__ = ["PACKING", "Retriever", "asks_about_present", "asks_about_time", "eligible", "split_sentences"]

# Every module file in this package registers itself on import: adding a module is adding a file.
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name != "base" and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
