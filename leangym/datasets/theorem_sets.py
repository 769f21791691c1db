"""One entry point for every theorem set: ``load_theorems(spec, split=None) -> list[Theorem]``.

``spec`` is one of

* ``"minif2f"`` or ``"minif2f:SOURCE"`` (a file, directory or URL of miniF2F) - miniF2F (see
  :mod:`leangym.datasets.minif2f` for where it comes from);
* ``"proplogic-heldout"`` or ``"proplogic-heldout:N"`` - the simulator's held-out
  propositional-logic set (the first N theorems; default the generator's full set),
  category ``level<difficulty>``, without the reference proofs;
* a ``.jsonl`` file (rows with ``formal_statement`` and optional ``name``, ``header``, ``split``);
* a ``.lean`` file: each ``theorem ... := by sorry`` (or ``:= sorry``) in it is one theorem,
  whose header is what stands before it that is not another statement (imports, ``open ...``,
  ``namespace X``, proved lemmas it may cite; see :func:`read_lean_file`); an ``example`` is
  named after its file (``p1.lean`` -> ``p1``);
* a directory of ``.lean`` files (searched recursively, but not inside hidden directories
  such as ``.git`` and ``.lake``, nor ``lake-packages``: a built Lean project keeps its
  dependencies' sources, Mathlib's, there); files without a statement to prove (a project's
  ``Main.lean``, ``lakefile.lean``) are skipped; the split is the file's or nearest folder's name
  when it names a split (``MiniF2F/Test/foo.lean``, ``MiniF2F/Test.lean`` -> ``test``: the two
  miniF2F-lean4 layouts), else a file of several theorems its own name, of one its folder's;
* a ``.json`` file holding one JSON array of such rows;
* an ``http(s)://`` URL of a JSONL file (downloaded once into the cache, see
  :mod:`leangym.datasets.download`; ``refresh=True`` downloads it again) or a ``file://`` URL
  (read in place).
"""
from __future__ import annotations

import re
from pathlib import Path

from leangym.datasets.download import fetch, file_url_path
from leangym.datasets.lean_files import read_lean_dir, read_lean_file
from leangym.datasets.minif2f import category as minif2f_category
from leangym.datasets.minif2f import load_minif2f
from leangym.datasets.rows import DatasetError, read_jsonl, select_split
from leangym.theorem import Theorem

SPECS = "FILE.jsonl, FILE.json, FILE.lean, DIR, minif2f[:SOURCE], proplogic-heldout[:N] or an http(s):// URL"


def check_spec(spec: str | Path) -> None:
    """A cheap check before any work: a DatasetError when ``spec`` names a local file or directory that is
    not there (a named set or a URL is checked when it is loaded)."""
    text = str(spec)
    if text.startswith("file://"):
        text = str(file_url_path(text))
    elif text.split(":", 1)[0] in ("minif2f", "proplogic-heldout") or "://" in text:
        return
    if not Path(text).expanduser().exists():
        raise DatasetError(f"{text}: no such file or directory; pass {SPECS}")


def load_theorems(spec: str | Path, split: str | None = None, *, refresh: bool = False) -> list[Theorem]:
    """The theorems named by ``spec`` (see the module docstring), filtered to ``split`` when given.

    ``refresh``: download an ``http(s)://`` source again instead of reading its cached copy.
    """
    text = str(spec)
    if text == "minif2f" or text.startswith("minif2f:"):
        return load_minif2f(text.partition(":")[2] or None, split, refresh=refresh)
    if text == "proplogic-heldout" or text.startswith("proplogic-heldout:"):
        size = text.partition(":")[2]
        if size and not (re.fullmatch(r"[0-9]+", size) and 1 <= int(size) <= 100_000):
            raise DatasetError(f"{text!r}: the size after ':' must be a whole number from 1 to 100000")
        return select_split(proplogic_heldout(int(size) if size else None), split, text)
    if text.startswith("file://"):  # a local path in URL form: a directory or a .lean file as well
        return load_theorems(file_url_path(text), split)
    if "://" in text:
        return select_split(read_jsonl(fetch(text, validate=read_jsonl, force=refresh)), split, text)
    path = Path(spec).expanduser()
    if path.is_dir():
        return select_split(read_lean_dir(path), split, str(path))
    if path.suffix == ".lean":
        return select_split(read_lean_file(path), split, str(path))
    if path.suffix in (".jsonl", ".json") or path.exists():
        return select_split(read_jsonl(path), split, str(path))
    raise DatasetError(f"unknown theorem set {text!r}: expected 'minif2f', 'proplogic-heldout[:N]', "
                       "a .jsonl (or .json array) file, a .lean file, a directory of .lean files, or a URL "
                       "(a single theorem is a Lean statement ending in ':= by sorry')")


def category_of(theorem: Theorem) -> str:
    """The reporting category: an explicit ``extra['category']``, else the miniF2F name prefix."""
    explicit = theorem.extra.get("category")
    return str(explicit) if explicit else minif2f_category(theorem.name)


def proplogic_heldout(size: int | None = None) -> list[Theorem]:
    """The simulator's held-out propositional-logic theorems, categorised by difficulty level.

    The generator stores each reference proof in ``Theorem.extra``; it is removed
    here, because the prover sees the Theorem and must not be handed the answer.
    """
    from leangym.datasets.proplogic import heldout_set  # the generator does real work: load it only when asked

    out = []
    for item in (heldout_set() if size is None else heldout_set(size)):
        t = item.theorem
        extra = {k: v for k, v in t.extra.items() if k != "proof"}
        extra.update(category=f"level{item.difficulty}", difficulty=item.difficulty, depth=item.depth)
        out.append(Theorem(t.formal_statement, t.name, t.header, t.split or "heldout", extra))
    return out
