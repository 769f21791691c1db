"""What a self-play iteration makes of its searches, shared by the single-process loop (``train.py``)
and the distributed learner and actors (``distributed/``): training rows from a finished search, the
statements a server refused, and how a held-out evaluation is reported."""
from __future__ import annotations

import sys
from typing import Any

from agents.alphaproof.actors import describe
from agents.alphaproof.curriculum import Curriculum
from agents.alphaproof.search import SearchResult, gives_verdict
from agents.alphaproof.train_args import Args

LOSSES = ("loss", "policy_loss", "value_loss", "negative_loss")  # what a learner step logs


def rows_from_result(result: SearchResult, min_unsolved_visits: int) -> list[dict[str, Any]]:
    """Policy + value rows from one finished search (``train.py``'s module docstring, step 2)."""
    if result.solved and not result.verified:
        return []  # the proof did not survive the final check: trust nothing from this tree
    # a search cut short (hung server, time limit), or one that met server failures, did not spend its
    # budget on proving: nothing is "not provable" (gives_verdict; for an unsolved search that is all it says)
    spent = not result.solved and gives_verdict(result)
    rows = []
    for i, t in enumerate(result.targets):
        negatives = {"rejected": list(t.rejected)} if t.rejected else {}  # what Lean rejected holds whatever else
        if t.steps_to_go is not None:
            rows.append({"state": t.state, "tactic": t.proof_tactic, "steps_to_go": t.steps_to_go, **negatives})
        elif spent and (i == 0 or sum(t.visit_counts) >= min_unsolved_visits):
            # The search spent its whole budget and never solved this state: "not provable
            # within budget". (After a solved root, unsolved side nodes were just abandoned.)
            rows.append({"state": t.state, "steps_to_go": None, **negatives})
        elif negatives:
            rows.append({"state": t.state, **negatives})
    return rows


def solve_rate_text(ev: dict[str, float]) -> str:
    """A held-out evaluation as ``7/40 = 0.175`` (one format wherever the run reports it)."""
    if "solve_rate" not in ev:
        return describe(ev)  # nothing evaluated, and why
    n, missing = int(ev["evaluated"]), int(ev.get("not_evaluated", 0))
    return (f"{round(ev['solve_rate'] * n)}/{n} = {ev['solve_rate']:.3f}"
            + (f" ({missing} more without a verdict)" if missing else ""))


def first_and_last(evals: list[dict]) -> tuple[dict, dict]:
    """The evaluations a run's summary compares: its last, and the first at the same budget (a run resumed from an
    older version's checkpoint made its earlier ones with another search)."""
    last = evals[-1]
    return next(e for e in evals if e.get("eval_lean_calls") == last.get("eval_lean_calls")), last


def curve_text(ev: dict[str, float]) -> tuple[str, str] | None:
    """An evaluation's solved-within counts as ``("1/2/4", "20/26/36")`` (the harness's budget curve); None without."""
    ks = sorted(int(k.split("_")[1]) for k in ev if k.startswith("within_") and k.endswith("_calls"))
    return ("/".join(map(str, ks)), "/".join(str(int(ev[f"within_{k}_calls"])) for k in ks)) if ks else None


def drop_rejected(rejected: list, source, curriculum: Curriculum, step: int) -> None:
    """Statements the server refused to start leave the training pool for good, one warning each.

    A refused statement says nothing about the agent and will be refused again, yet its
    curriculum weight would stay that of an untried theorem. The curriculum keeps the keys
    (so a resumed run skips them too) and drops a level left with nothing to draw.
    """
    for task, why in rejected:
        if task.key in curriculum.rejected:
            continue  # (drawn twice in one batch)
        curriculum.reject(task.key)
        print(f"[iteration {step}] warning: the server rejected {task.theorem.name} ({' '.join(why.split())[:300]}); "
              "it is dropped from the training pool", file=sys.stderr)
    for level in [lv for lv in curriculum.levels if not source.drawable(lv, curriculum)]:
        curriculum.drop_level(level)
    if not curriculum.levels:
        raise ValueError("the server rejected the statement of every training theorem, so nothing is left to train "
                         "on: check the theorems (and their header) against the server's Lean and Mathlib; the "
                         "rejections are printed above")


def start_label(args: Args) -> str:
    """What the iteration-0 evaluation measured: the warm-started net, or the net as given (``--init``)."""
    return "after warm start" if args.warmup_steps > 0 else "before self-play (no warm start)"
