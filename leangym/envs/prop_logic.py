"""``PropLogic-v0``: generated propositional-logic theorems on the in-process simulated Lean kernel.

The same env as ``LeanProof-v0`` (observation, action, rewards, ``session``
search API, final re-check), but the Lean process is a
:class:`leangym.sim.local.LocalProcess` (no server, no HTTP) and the theorems
come from the seeded generator (:mod:`leangym.datasets.proplogic`):

* ``split="train"``: an endless stream of distinct theorems at ``difficulty``
  (one level, or an inclusive ``(lo, hi)`` range cycled evenly), never one of
  the held-out statements. ``reset(seed=s)`` restarts the stream at seed ``s``;
  ``reset()`` takes the next theorem (an ``index`` option is an error here).
* ``split="heldout"``: the fixed evaluation set (``heldout_size`` theorems,
  restricted to ``difficulty``), drawn at random, or in order with
  ``reset(options={"index": i})``.

``info["reference_proof"]`` is the generator's reference proof (tactics applied
in order to the first goal), ``info["difficulty"]`` its level.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from leangym.backends.select import open_backend
from leangym.envs.lean_proof import LeanProofEnv, theorem_index
from leangym.datasets import proplogic as generator
from leangym.theorem import Theorem

__all__ = ["PropLogicEnv"]


class PropLogicEnv(LeanProofEnv):
    """Prove generated propositional theorems on the simulated kernel.

    Args:
        difficulty: a level in ``1..generator.MAX_DIFFICULTY`` or an inclusive ``(lo, hi)`` range.
        split: ``"train"`` (the training stream) or ``"heldout"`` (the evaluation set).
        heldout_size: size of the held-out set (``split="heldout"``; also what training excludes).
        factorized: simulate the newer server generation (one branch per goal).
        process_factory: replaces the in-process kernel (e.g. a lease of a simulated server).
        fresh_process: a new kernel per episode (default with the in-process kernel: it costs
            microseconds, keeps memory flat and makes every episode, state ids included, reproducible).
        **kwargs: everything :class:`LeanProofEnv` takes (``max_steps``, rewards, ``policy``, ...),
            except ``theorem``/``server``.
    """

    def __init__(self, difficulty: int | tuple[int, int] = (1, 3), split: str = "train", *,
                 heldout_size: int = generator.HELDOUT_SIZE, factorized: bool = False,
                 process_factory: Any = None, **kwargs: Any) -> None:
        if split not in ("train", "heldout"):
            raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
        for bad in ("theorem", "server"):
            if bad in kwargs:
                raise TypeError(f"PropLogicEnv draws its own theorems (no {bad!r}); use LeanProof-v0 for that")
        lo, hi = generator.levels(difficulty)
        self.difficulty = lo if lo == hi else (lo, hi)
        self.split = split
        self.heldout_size = int(heldout_size)
        self._heldout = [t for t in generator.heldout_set(self.heldout_size) if lo <= t.difficulty <= hi]
        if split == "heldout" and not self._heldout:
            raise ValueError(f"the held-out set of {self.heldout_size} theorems has none at difficulty "
                             f"{self.difficulty}: raise heldout_size or widen difficulty")
        self._stream: Iterator[generator.PropTheorem] | None = None
        self._stream_at: tuple[int, int] | None = None  # (seed, theorems drawn): see __getstate__
        self._current: generator.PropTheorem | None = None
        self._reseeded = self._seeding = False
        kwargs.setdefault("fresh_process", process_factory is None)
        super().__init__(process_factory=process_factory or open_backend(None, factorized=factorized), **kwargs)

    def _draw_theorem(self, options: Mapping[str, Any]) -> Theorem:
        # sticky until the stream restarts: a seeded reset that picks its theorem (options) draws
        # nothing from the stream, and the next unseeded reset must still start it from this seed
        self._reseeded = self._reseeded or self._seeding
        if options.get("theorem") is not None:  # an explicit statement: no reference proof
            self._current = None
            return super()._draw_theorem(options)
        if self.split == "heldout":
            if options.get("index") is not None:
                self._current = self._heldout[theorem_index(options["index"], len(self._heldout))]
            else:
                self._current = self._heldout[int(self.np_random.integers(len(self._heldout)))]
        else:
            if options.get("index") is not None:  # the training stream has no positions to pick
                raise ValueError("reset(options={'index': i}) picks a held-out theorem: use split='heldout', or "
                                 "options={'theorem': ...} for a statement of your own")
            if self._stream is None or self._reseeded:
                self._new_stream()
                self._reseeded = False
            try:
                self._current = next(self._stream)
            except StopIteration:  # every distinct theorem of these levels drawn: again, in another order
                self._new_stream()
                self._current = next(self._stream)
            self._stream_at = (self._stream_at[0], self._stream_at[1] + 1)
        return self._current.theorem

    def _new_stream(self) -> None:
        self._stream_at = (int(self.np_random.integers(2**31 - 1)), 0)
        self._stream = self._training_stream(self._stream_at[0])

    def _training_stream(self, seed: int):
        return generator.training_stream(seed, self.difficulty, exclude=generator.heldout_set(self.heldout_size))

    # A generator cannot be pickled: a copy (copy.deepcopy, pickle) keeps the stream's seed and
    # position instead, and replays it to the same place, so it draws what the original would.
    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_stream": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if state.get("_stream_at") is not None:
            seed, drawn = state["_stream_at"]
            self._stream = self._training_stream(seed)
            for _ in range(drawn):
                next(self._stream)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        self._seeding = seed is not None  # (taken by _draw_theorem: only a reset that got that far was seeded)
        return super().reset(seed=seed, options=options)

    def _episode_info(self) -> dict[str, Any]:
        t = self._current
        if t is None:
            return {}
        return {"reference_proof": t.proof, "difficulty": t.difficulty}
