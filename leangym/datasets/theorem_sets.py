"""One entry point for every theorem set: ``load_theorems(spec, split=None) -> list[Theorem]``.

``spec`` is one of

* ``"minif2f"`` - miniF2F (see :mod:`leangym.datasets.minif2f` for where it comes from);
* ``"proplogic-heldout"`` or ``"proplogic-heldout:N"`` - the simulator's held-out
  propositional-logic set (the first N theorems; default the generator's full set),
  category ``level<difficulty>``, without the reference proofs;
* a ``.jsonl`` file (rows with ``formal_statement`` and optional ``name``, ``header``, ``split``);
* a directory of ``.lean`` files (searched recursively, but not inside hidden directories
  such as ``.git`` and ``.lake``, nor ``lake-packages``: a built Lean project keeps its
  dependencies' sources, Mathlib's, there), each holding ONE
  ``theorem ... := by sorry`` (or ``:= sorry``) with its header (imports, ``open ...``,
  ``namespace X``) before it; ``end X`` lines after it that close such a scope are dropped,
  an ``example`` is named after its file (``p1.lean`` -> ``p1``);
  files without a theorem (a project's ``Main.lean``, ``lakefile.lean``) are skipped;
  a file in a subdirectory gets the lower-cased name of its directory as split
  (``MiniF2F/Test/foo.lean`` -> ``test``), as in the miniF2F-lean4 repository layout;
* a single ``.lean`` file;
* a ``.json`` file holding one JSON array of such rows;
* an ``http(s)://`` URL of a JSONL file (downloaded once into the cache, see
  :mod:`leangym.datasets.download`; ``refresh=True`` downloads it again) or a ``file://`` URL
  (read in place).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from leangym.datasets.download import fetch
from leangym.datasets.minif2f import category as minif2f_category
from leangym.datasets.minif2f import load_minif2f
from leangym.datasets.rows import DatasetError, read_jsonl, select_split
from leangym.theorem import DECLARATION, Theorem, TheoremError, strip_comments

# Lake's dependency trees (old and new layout; `.lake` is hidden anyway): other packages' sources
LAKE_DIRS = (".lake", "lake-packages")


def load_theorems(spec: str | Path, split: str | None = None, *, refresh: bool = False) -> list[Theorem]:
    """The theorems named by ``spec`` (see the module docstring), filtered to ``split`` when given.

    ``refresh``: download an ``http(s)://`` source again instead of reading its cached copy.
    """
    text = str(spec)
    if text == "minif2f" or text.startswith("minif2f:"):
        return load_minif2f(text.partition(":")[2] or None, split, refresh=refresh)
    if text == "proplogic-heldout" or text.startswith("proplogic-heldout:"):
        size = text.partition(":")[2]
        if size and not size.isdigit():
            raise DatasetError(f"{text!r}: the size after ':' must be a number")
        return select_split(proplogic_heldout(int(size) if size else None), split, text)
    if "://" in text:
        return select_split(read_jsonl(fetch(text, validate=read_jsonl, force=refresh)), split, text)
    path = Path(spec).expanduser()
    if path.is_dir():
        return select_split(read_lean_dir(path), split, str(path))
    if path.suffix == ".lean":
        return select_split([read_lean_file(path)], split, str(path))
    if path.suffix in (".jsonl", ".json") or path.exists():
        return select_split(read_jsonl(path), split, str(path))
    raise DatasetError(f"unknown theorem set {text!r}: expected 'minif2f', 'proplogic-heldout[:N]', "
                       "a .jsonl (or .json array) file, a .lean file, a directory of .lean files, or a URL "
                       "(a single theorem is a Lean statement ending in ':= by sorry')")


def category_of(theorem: Theorem) -> str:
    """The reporting category: an explicit ``extra['category']``, else the miniF2F name prefix."""
    explicit = theorem.extra.get("category")
    return str(explicit) if explicit else minif2f_category(theorem.name)


# `namespace A.B`, `section [A]`, `noncomputable section`, `end [A.B]` at the start of a line
_SCOPE = re.compile(r"^[ \t]*(?:noncomputable[ \t]+)?(namespace|section|end)(?![\w.'?!])[ \t]*(\S*)", re.M)
_CLOSER = re.compile(r"[ \t]*end(?:[ \t]+(\S+))?[ \t]*")


def _open_scopes(code: str) -> list[str]:
    """The ``namespace``/``section`` scopes still open at the end of ``code``, innermost last, one
    entry per name component (``namespace A.B`` opens ``A`` and ``B``; an anonymous section is "")."""
    scopes: list[str] = []
    for m in _SCOPE.finditer(code):
        parts = m.group(2).split(".") if m.group(2) else [""]
        if m.group(1) != "end":
            scopes.extend(parts)
        elif scopes[len(scopes) - len(parts):] == parts:
            del scopes[len(scopes) - len(parts):]
    return scopes


def _without_closers(code: str, scopes: list[str]) -> int:
    """The length of ``code`` (a theorem and what follows it) without its trailing ``end`` lines
    that close ``scopes`` (opened before the theorem, e.g. compfiles' ``namespace X ... end X``).

    Those lines are dropped, not kept: the statement must end in ``:= by sorry``, and Lean closes
    the scopes still open at the end of the input by itself. The opener stays in the header, so
    the theorem is declared inside the namespace both for ``proof_from_sorry`` and in the final
    check (which then prints its name as ``X.name_leangym_...``).
    """
    end, closers = len(code.rstrip()), []
    while True:  # the `end` lines at the bottom, read upwards
        line_start = code.rfind("\n", 0, end) + 1
        m = _CLOSER.fullmatch(code, line_start, end)
        if m is None:
            break
        closers.insert(0, m.group(1).split(".") if m.group(1) else [""])  # kept in file order
        end = len(code[:line_start].rstrip())
    scopes = list(scopes)
    for parts in closers:  # the first closes the innermost scope
        if scopes[len(scopes) - len(parts):] != parts:
            return len(code.rstrip())  # not ours to drop: left for the statement check to refuse
        del scopes[len(scopes) - len(parts):]
    return end


def read_lean_file(path: Path, split: str | None = None, *, missing_ok: bool = False) -> Theorem | None:
    """A ``.lean`` file with exactly one theorem ending in ``:= by sorry``; text before it is the header.

    Comments do not count (a theorem commented out, a remark after ``sorry``), nor do ``end``
    lines after the theorem that close a ``namespace``/``section`` opened before it.
    An ``example`` is named after the file (``p1.lean`` -> ``p1``), so that a directory of
    examples has distinct names.
    ``missing_ok``: a file without any theorem gives None instead of an error.
    """
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read ({e})") from None
    code = strip_comments(source)  # string-aware: a "--" inside a string literal is not a comment
    bare = strip_comments(source, strings=True)  # for matching: no `theorem` inside a string counts
    decls = list(DECLARATION.finditer(bare))
    if not decls and missing_ok:
        return None
    if len(decls) != 1:
        raise DatasetError(f"{path}: expected exactly one theorem/lemma/example, found {len(decls)}")
    start = decls[0].start()
    end = start + _without_closers(bare[start:], _open_scopes(bare[:start]))
    line = source.count("\n", 0, start) + 1
    name = path.stem if decls[0].group("kind") == "example" else ""
    try:
        return Theorem(code[start:end].strip(), name=name, header=source[:start], split=split,
                       extra={"source_file": str(path)})
    except TheoremError as e:
        raise DatasetError(f"{path}:{line}: {e}") from None


def lean_files(root: Path) -> list[Path]:
    """The ``.lean`` files under ``root`` (sorted paths), not looking into hidden directories
    (``.git``, ``.lake``) nor ``lake-packages``: Lake keeps a built project's dependencies there."""
    found: list[Path] = []
    for folder, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if not d.startswith(".") and d not in LAKE_DIRS]  # pruned, not walked
        found += [Path(folder) / f for f in files if f.endswith(".lean")]
    return sorted(p for p in found if p.is_file())


def read_lean_dir(root: Path) -> list[Theorem]:
    """Every ``.lean`` file under ``root`` (see :func:`lean_files`) holding a theorem; names must be unique."""
    files = lean_files(root)
    if not files:
        raise DatasetError(f"{root}: no .lean files")
    theorems: list[Theorem] = []
    seen: dict[str, Path] = {}
    for f in files:
        rel = f.relative_to(root)
        split = rel.parts[-2].lower() if len(rel.parts) > 1 else None
        t = read_lean_file(f, split, missing_ok=True)
        if t is None:
            continue
        if t.name in seen:
            raise DatasetError(f"{f}: duplicate theorem name {t.name!r} (also in {seen[t.name]})")
        seen[t.name] = f
        theorems.append(t)
    if not theorems:
        raise DatasetError(f"{root}: no .lean file holds a theorem")
    return theorems


def proplogic_heldout(size: int | None = None) -> list[Theorem]:
    """The simulator's held-out propositional-logic theorems, categorised by difficulty level.

    The generator stores each reference proof in ``Theorem.extra``; it is removed
    here, because the prover sees the Theorem and must not be handed the answer.
    """
    from leangym.sim.generator import heldout_set  # the generator does real work: load it only when asked

    out = []
    for item in (heldout_set() if size is None else heldout_set(size)):
        t = item.theorem
        extra = {k: v for k, v in t.extra.items() if k != "proof"}
        extra.update(category=f"level{item.difficulty}", difficulty=item.difficulty, depth=item.depth)
        out.append(Theorem(t.formal_statement, t.name, t.header, t.split or "heldout", extra))
    return out
