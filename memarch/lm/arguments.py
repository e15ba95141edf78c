"""The LM options every ``memarch`` command shares (``--lm``, ``--meta-lm``, ``--judge-lm``, ...)
and the :class:`LMRoles` they describe."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memarch.lm.config import DEFAULT_RETRIES, DEFAULT_TIMEOUT_S

if TYPE_CHECKING:  # roles.py imports DSPy (~1 s): a parser that only adds the options never needs it
    from memarch.lm.roles import LMRoles

LM_HELP = ("none (default: the LM-free space), local (embedded SmolLM2-135M, offline), a litellm model "
           "such as openai/gpt-4o-mini or ollama_chat/llama3, or an OpenAI-compatible base URL "
           "such as http://localhost:11434/v1#llama3")


def add_lm_arguments(parser: argparse.ArgumentParser, default: str = "none") -> None:
    """Add the LM options to a subcommand's parser.

    Example::

        def add_arguments(p):
            add_lm_arguments(p)

        def run(args):
            with roles_from_args(args) as roles:
                resources = roles.resources()
    """
    g = parser.add_argument_group("language models")
    g.add_argument("--lm", default=default, help=f"task LM (reader, LM encoders and modules): {LM_HELP}")
    g.add_argument("--meta-lm", default=None, help="proposer/diagnoser LM (default: same as --lm)")
    g.add_argument("--judge-lm", default=None, help="answer judge LM (default: same as --lm)")
    g.add_argument("--lm-model", default=None, help="model name for a base-URL --lm without #model")
    g.add_argument("--lm-cache-dir", default=None, help="DSPy LM cache directory (default $MEMARCH_CACHE_DIR/lm)")
    g.add_argument("--no-lm-cache", action="store_true", help="do not cache LM calls on disk")
    g.add_argument("--lm-threads", type=int, default=None, help="CPU threads of the embedded model")
    g.add_argument("--lm-timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help=f"seconds per remote LM request (default {DEFAULT_TIMEOUT_S:g})")
    g.add_argument("--lm-no-schema", action="store_true",
                   help="do not ask a base-URL server for JSON-schema constrained decoding")
    g.add_argument("--lm-retries", type=int, default=DEFAULT_RETRIES,
                   help=f"retries of a failed remote LM request (default {DEFAULT_RETRIES})")


def roles_from_args(args: argparse.Namespace, check: bool = True) -> "LMRoles":
    """The :class:`LMRoles` the parsed options describe (not yet started: use it in ``with``)."""
    from memarch.lm.roles import LMRoles

    return LMRoles(
        task=getattr(args, "lm", None), meta=getattr(args, "meta_lm", None), judge=getattr(args, "judge_lm", None),
        model=getattr(args, "lm_model", None), cache_dir=getattr(args, "lm_cache_dir", None),
        cache=not getattr(args, "no_lm_cache", False), threads=getattr(args, "lm_threads", None),
        timeout=getattr(args, "lm_timeout", DEFAULT_TIMEOUT_S),
        num_retries=getattr(args, "lm_retries", DEFAULT_RETRIES),
        json_schema=not getattr(args, "lm_no_schema", False), check=check)
