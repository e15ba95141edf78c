"""TextWorldExpress (twc, cookingworld, coin, mapreader, ...): agent tasks under the collection ->
deployment protocol. Trajectories become experience episodes with an outcome; gold paths can seed
the collection phase as demonstrations. Splits use the games' own folds: search = train seeds,
validation = dev seeds, test = test seeds, so the three never share a game instance."""
from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from typing import Any, ClassVar

from memarch.benchmarks.base import SPLITS, AgentTask, TaskBenchmark
from memarch.errors import DataError, MemarchError
from memarch.benchmarks.agents.memory_guided import MemoryGuidedAgent, guides_from
from memarch.benchmarks.agents.dspy_agent import DSPyAgent
from memarch.benchmarks.agents.memory_skill import NoteSession, move_counts
from memarch.benchmarks.agents.note_policy import NotePolicy
from memarch.benchmarks.agents.note_tools import NoteToolAgent
from memarch.pipeline.episodes import Episode, Step
from memarch.pipeline.retrieval import Retrieval

# Small, fast instances (a few locations, no doors): an episode is tens of steps at ~1 ms each.
GAME_PARAMS = {
    "twc": "numLocations=1,numItemsToPutAway=2,includeDoors=0,limitInventorySize=0",
    "cookingworld": "numLocations=1,numIngredients=2,numDistractorItems=2,includeDoors=0,limitInventorySize=0",
    "coin": "numLocations=4,numDistractorItems=0,includeDoors=0,limitInventorySize=0",
    "mapreader": "numLocations=4,maxDistanceApart=2,maxDistractorItemsPerLocation=0,includeDoors=0,limitInventorySize=0",
    "arithmetic": "", "sorting": "", "simonsays": "", "peckingorder": "",
}
ALIASES = {"cooking": "cookingworld", "peck": "peckingorder"}
FOLD = {"search": "train", "validation": "dev", "test": "test", "all": "train"}


def make_env(step_limit: int):
    try:
        from textworld_express import TextWorldExpressEnv
    except ImportError as exc:  # pragma: no cover - installed by make install
        raise DataError("textworld-express is not installed (pip install textworld-express)") from exc
    try:
        return TextWorldExpressEnv(envStepLimit=step_limit)
    except Exception as exc:  # the JVM is missing or failed to start
        raise DataError(f"TextWorldExpress could not start its Java runtime ({exc.__class__.__name__}: {exc}); "
                        "install Java 17 (Debian: default-jre-headless)") from None


class TextWorldBenchmark(TaskBenchmark):
    """Seeded TextWorldExpress tasks, played by an LM-free memory-guided agent or a DSPy agent.

    Example::

        bench = TextWorldBenchmark(games=("twc", "coin"), tasks_per_game=8, seed=0)
        collect, deploy = bench.split("search").phases()

    Args:
        games: game names (``cooking`` and ``peck`` are accepted aliases).
        tasks_per_game: tasks per game and split.
        step_limit: maximum actions per episode.
        demonstrations: collect with the gold path instead of the agent (outcome success).
        agent_lm: a ``dspy.LM`` to play with the DSPy agent; None plays LM-free.
        mode: ``static`` (memory frozen while deployed) or ``dynamic``.
    """

    name: ClassVar[str] = "textworld"
    family: ClassVar[str] = "experience"
    categories: ClassVar[tuple[str, ...]] = tuple(GAME_PARAMS)
    opt_in_modules: ClassVar[bool] = True  # its agent takes note actions: the `files` store is searched
    uses_note_store: ClassVar[bool] = True
    uses_agent_lm: ClassVar[bool] = True

    def __init__(self, data: Any = None, *, games: tuple[str, ...] | str = ("twc", "cookingworld", "coin", "mapreader"),
                 tasks_per_game: int = 8, step_limit: int = 40, demonstrations: bool = True,
                 agent_lm: Any = None, seed: int = 0, mode: str = "static", collect_share: float = 0.5,
                 explore: float = 0.35, **split_options: Any):
        super().__init__([], mode=mode, collect_share=collect_share, seed=seed, **split_options)
        if isinstance(games, str):
            games = tuple(g.strip() for g in games.split(",") if g.strip())
        games = tuple(ALIASES.get(g, g) for g in games)
        unknown = [g for g in games if g not in GAME_PARAMS]
        if unknown:
            raise MemarchError(f"unknown TextWorldExpress game(s) {', '.join(unknown)}; known: {', '.join(GAME_PARAMS)}")
        self.games = games
        self.tasks_per_game = int(tasks_per_game)
        self.step_limit = int(step_limit)
        self.demonstrations = bool(demonstrations)
        self.agent_lm = agent_lm
        self.explore = float(explore)
        self._env = None
        self._task_cache: dict[str, list[AgentTask]] = {}
        self.note_store = None  # a `files` store: the agent takes memory actions on it (see use_note_store)
        self.split_name = "all"
        self.tasks = self._make_tasks("search")  # "all" plays the search fold

    # -- tasks and splits ------------------------------------------------------------------------
    @property
    def env(self):
        if self._env is None:
            self._env = make_env(self.step_limit)
        return self._env

    def _make_tasks(self, split: str) -> list[AgentTask]:
        if split in self._task_cache:
            return list(self._task_cache[split])
        fold = FOLD[split]
        tasks: list[AgentTask] = []
        for game in self.games:
            self.env.load(game, GAME_PARAMS[game])
            pool = {"train": self.env.getValidSeedsTrain, "dev": self.env.getValidSeedsDev,
                    "test": self.env.getValidSeedsTest}[fold]()
            rng = random.Random(f"{self.seed}/{game}/{fold}")
            for s in rng.sample(list(pool), min(self.tasks_per_game, len(pool))):
                _, infos = self.env.reset(seed=s, gameFold=fold, gameName=game, gameParams=GAME_PARAMS[game])
                tasks.append(AgentTask(id=f"{game}-{fold}-{s}", text=f"{game}: {infos['taskDescription']}",
                                       namespace="textworld",
                                       metadata={"game": game, "category": game, "fold": fold, "seed": s}))
        # Interleave games so the collection share covers every game.
        tasks.sort(key=lambda t: hash_seed(self.seed, t.id))
        self._task_cache[split] = tasks
        return list(tasks)

    def split(self, name: str) -> "TextWorldBenchmark":
        if name == "all":
            return self
        if name not in SPLITS:
            raise MemarchError(f"unknown split {name!r}; expected one of {', '.join(SPLITS)} or all")
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view.tasks = self._make_tasks(name)
        view.split_name = name
        return view

    def phases(self) -> tuple[list[AgentTask], list[AgentTask]]:
        collect, deploy = super().phases()
        collect = [replace(t, metadata={**t.metadata, "phase": "collect"}) for t in collect]
        return collect, deploy

    def gold_sources(self, task: AgentTask) -> list[str]:
        """Collected episodes of the same game: what memory should bring back for ``task``."""
        collect, _ = self.phases()
        return [t.id for t in collect if t.metadata["game"] == task.metadata["game"]]

    def use_note_store(self, store: Any) -> None:
        """Let the agent keep notes in ``store`` (a `files` store; None: no notes): the LM-free
        agent through `NotePolicy`, the DSPy agent through note tools. One namespace per episode."""
        self.note_store = store if hasattr(store, "scaffold") else None

    # -- playing -------------------------------------------------------------------------------
    def attempt(self, task: AgentTask, context: str | None, retrieval: Retrieval | None = None) -> Episode:
        game, fold, s = task.metadata["game"], task.metadata["fold"], task.metadata["seed"]
        obs, infos = self.env.reset(seed=s, gameFold=fold, gameName=game, gameParams=GAME_PARAMS[game],
                                    generateGoldPath=True)
        gold = list(self.env.getGoldActionSequence())
        demo = self.demonstrations and task.metadata.get("phase") == "collect"
        agent = MemoryGuidedAgent(explore=self.explore, seed=hash_seed(self.seed, task.id))
        notes = (NoteSession(self.note_store, f"{task.namespace}/notes/{task.id}")
                 if self.note_store is not None and not demo else None)
        lm_agent = None
        if self.agent_lm is not None and not demo:
            lm_agent = (NoteToolAgent(self.agent_lm, notes, fallback=agent) if notes is not None
                        else DSPyAgent(self.agent_lm, fallback=agent))
        policy = NotePolicy(notes) if notes is not None and lm_agent is None else None
        if policy is not None:
            policy.observe("", obs)
        guides = guides_from(retrieval)
        steps: list[Step] = []
        history: list[str] = []
        done, score, success = False, 0.0, False
        for i in range(self.step_limit):
            if demo:
                if i >= len(gold):
                    break
                action = gold[i]
            elif lm_agent is not None:
                action, _ = lm_agent.act(task.text, obs, infos["validActions"], history, context or "", guides)
            else:
                hints = policy.hints(infos["validActions"]) if policy is not None else None
                action, _ = agent.act(infos["validActions"], history, guides, observation=obs, task=task.text,
                                      hints=hints)
            obs, _reward, done, infos = self.env.step(action)
            if policy is not None:
                policy.observe(action, obs)
            history.append(action)
            steps.append(Step(id=f"s{i + 1}", action=action, observation=obs.strip()[:600]))
            score = float(infos.get("score", 0.0))
            success = bool(infos.get("tasksuccess"))
            if done or success or infos.get("taskfailure"):
                break
        return Episode(id=task.id, task=task.text, steps=steps, outcome="success" if success else "failure",
                       namespace=task.namespace,
                       metadata={"game": game, "fold": fold, "seed": s, "score": max(score, 0.0),
                                 "steps": len(steps), "gold_steps": len(gold), "demonstration": demo,
                                 # the trial's LM fallback counts read these (the agent lives per game)
                                 "agent_lm_requests": lm_agent.lm_requests if lm_agent else 0,
                                 "agent_fallbacks": lm_agent.fallbacks if lm_agent else 0,
                                 **({} if demo else move_counts(history, [st.observation for st in steps])),
                                 **({"memory_skill": notes.report(len(steps))} if notes is not None else {})})

    def score(self, task: AgentTask, episode: Episode) -> float:
        """Success counts 1; otherwise the game's own normalised partial score (0..1), halved."""
        return 1.0 if episode.outcome == "success" else 0.5 * float(episode.metadata.get("score", 0.0))


def hash_seed(seed: int, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}/{key}".encode()).digest()[:4], "big")
