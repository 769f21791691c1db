"""miniF2F (Lean 4): loading, validation and the problem categories used in reports.

Accepted row shapes (one JSON object per line):

* leangym / miniF2F-lean4: ``name``, ``split``, ``header``, ``formal_statement``
  ending in ``:= by sorry`` (+ e.g. ``source_file``);
* DeepSeek-Prover-V1.5: the same names, statements ending in ``:= by`` (no
  ``sorry``), extra fields (``informal_prefix``, ``goal``) kept in
  :attr:`Theorem.extra`.

Where the file comes from (:func:`load_minif2f`), first match wins:

1. an explicit ``source`` (a path, or an ``http(s)://`` / ``file://`` URL);
2. ``$LEANGYM_MINIF2F`` (a file, or a directory holding ``minif2f_lean4.jsonl``);
3. the shared copy beside the repository, ``../shared/data/minif2f/minif2f_lean4.jsonl``;
4. a download of :data:`DEFAULT_URL` into the cache (``$LEANGYM_CACHE`` or ``~/.cache/leangym``).

A directory (``minif2f:DIR`` or ``$LEANGYM_MINIF2F=DIR``) without ``minif2f_lean4.jsonl`` is
read as ``.lean`` files, e.g. a miniF2F-lean4 checkout, built or not (``MiniF2F/Test/x.lean``
is split ``test``; Lake's ``.lake`` / ``lake-packages`` trees are skipped).

The project never ships a copy of miniF2F.
"""
from __future__ import annotations

import os
from pathlib import Path

from leangym.datasets.download import DownloadError, fetch, file_url_path
from leangym.datasets.lean_files import lean_files, read_lean_dir
from leangym.datasets.rows import DatasetError, read_jsonl, select_split
from leangym.theorem import Theorem

# DeepSeek-Prover-V1.5's miniF2F (488 statements, older statement versions than miniF2F-lean4
# at HEAD; see the shared README), pinned to a commit so a cached copy never silently changes.
DEFAULT_URL = ("https://raw.githubusercontent.com/deepseek-ai/DeepSeek-Prover-V1.5/"
               "2c4ba9119eef74d0d611f494261b2c5bae98c69a/datasets/minif2f.jsonl")
PINNED_URL, PINNED_COUNTS = DEFAULT_URL, {"valid": 244, "test": 244}  # what a download of it must hold
SPLITS = ("valid", "test")
REQUIRED_FIELDS = ("name", "split", "formal_statement")
SHARED_RELATIVE = Path("..") / "shared" / "data" / "minif2f" / "minif2f_lean4.jsonl"
FILE_NAME = "minif2f_lean4.jsonl"

# Longest prefix first: "mathd_algebra_..." is mathd_algebra, "algebra_..." is algebra.
CATEGORY_PREFIXES = ("mathd_algebra", "mathd_numbertheory", "amc12", "aime", "imo", "induction",
                     "algebra", "numbertheory")


def category(name: str) -> str:
    """The miniF2F problem family of ``name`` (``aimeI_2000_p7`` -> ``aime``); else the first word."""
    for prefix in CATEGORY_PREFIXES:
        if name.startswith(prefix):
            return prefix
    return name.split("_", 1)[0] or "other"


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def local_copy() -> Path | None:
    """``$LEANGYM_MINIF2F`` or the shared copy beside the repository, if present.

    A directory named by ``$LEANGYM_MINIF2F`` gives its ``minif2f_lean4.jsonl``, else itself
    when it holds ``.lean`` files (see :func:`load_minif2f`).
    """
    env = os.environ.get("LEANGYM_MINIF2F")
    if env:
        p = Path(env).expanduser()
        if p.is_dir() and not (p / FILE_NAME).exists() and _has_lean_files(p):
            return p
        p = p / FILE_NAME if p.is_dir() else p
        if not p.exists():
            nor = " (nor any .lean file in that directory)" if p.name == FILE_NAME and p.parent.is_dir() else ""
            raise DatasetError(f"LEANGYM_MINIF2F={env!r}: no such file {p}{nor}")
        return p
    shared = (repo_root() / SHARED_RELATIVE).resolve()
    return shared if shared.exists() else None


def _has_lean_files(root: Path) -> bool:
    return bool(lean_files(root))


def _read_dir(root: Path) -> list[Theorem]:
    """miniF2F from a directory: its ``minif2f_lean4.jsonl``, else its ``.lean`` files."""
    if (root / FILE_NAME).is_file():
        return read_jsonl(root / FILE_NAME, required=REQUIRED_FIELDS, check=_check_split)
    if not _has_lean_files(root):
        raise DatasetError(f"{root}: a directory without {FILE_NAME} or .lean files; pass the JSONL file "
                           "itself, or a directory of miniF2F .lean files (e.g. a miniF2F-lean4 checkout)")
    return read_lean_dir(root)


def _check_whole(theorems: list[Theorem], pinned: bool) -> None:
    """The pinned download is all of miniF2F (a body cut at a line boundary parses, row by row)."""
    if pinned:
        counts = {sp: sum(t.split == sp for t in theorems) for sp in SPLITS}
        if counts != PINNED_COUNTS:
            raise DatasetError(f"expected miniF2F's statements {PINNED_COUNTS}, got {counts}: cut short?")


def _check_split(theorem: Theorem) -> str | None:
    return None if theorem.split in SPLITS else f"split {theorem.split!r} is not one of {SPLITS}"


def load_minif2f(source: str | Path | None = None, split: str | None = None, *,
                 sha256: str | None = None, cache: Path | None = None, refresh: bool = False) -> list[Theorem]:
    """miniF2F theorems (of ``split`` when given: ``valid`` or ``test``), in file order.

    ``refresh``: download an ``http(s)://`` source again instead of reading its cached copy.
    """
    if split is not None and split not in SPLITS:
        raise DatasetError(f"miniF2F has splits {SPLITS}, not {split!r}")
    if source is None:
        source = local_copy() or DEFAULT_URL
    text = str(source)
    if text.startswith("file://") and file_url_path(text).is_dir():  # a checkout, named as a URL
        text = str(file_url_path(text))
    if "://" in text:
        try:
            path = fetch(text, sha256=sha256, cache=cache, force=refresh,
                         validate=lambda p: _check_whole(read_jsonl(p, required=REQUIRED_FIELDS, check=_check_split),
                                                         pinned=text == PINNED_URL))
        except DownloadError as e:
            raise DownloadError(f"{e}; offline? Point $LEANGYM_MINIF2F at a local copy of the file "
                                f"(a {FILE_NAME} with rows like {REQUIRED_FIELDS}) or pass its path") from None
    else:
        path = Path(text).expanduser()
    if path.is_dir():
        return select_split(_read_dir(path), split, str(path))
    theorems = read_jsonl(path, required=REQUIRED_FIELDS, check=_check_split)
    if text == PINNED_URL:  # a copy cached before this check, or edited since, is held to it too
        try:
            _check_whole(theorems, pinned=True)
        except DatasetError as e:
            raise DatasetError(f"{path}: {e} (delete it, or pass refresh=True / --refresh-dataset)") from None
    return select_split(theorems, split, str(path))
