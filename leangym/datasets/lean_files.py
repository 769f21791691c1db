"""Theorems in Lean source: a ``.lean`` file (each ``theorem ... := by sorry`` is one) or a directory of them.

A statement's header is what stands before it that is not another statement (imports,
``open ...``, ``namespace X``, proved lemmas it may cite); an ``example`` is named after its
file. A directory is searched recursively, but not inside hidden directories (``.git``,
``.lake``) nor ``lake-packages`` (a built Lean project keeps its dependencies' sources
there); the split comes from the file's or nearest folder's name (the two miniF2F-lean4
layouts). Used by :mod:`leangym.datasets.theorem_sets` and :mod:`leangym.datasets.minif2f`.
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from leangym.datasets.rows import DatasetError
from leangym.lexer import scan
from leangym.theorem import DECLARATION, Theorem, TheoremError

# Lake's dependency trees (old and new layout; `.lake` is hidden anyway): other packages' sources
LAKE_DIRS = (".lake", "lake-packages")


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


# The end of a benchmark statement: `:= by sorry` / `:= sorry` (`:= by` alone, DeepSeek-Prover's
# variant, is recognised where nothing but scope closers follows it)
_SORRY_END = re.compile(r":=\s*(?:by\s+)?sorry(?![\w'.?!])")
_BY_END = re.compile(r":=\s*by\s*")
_OPENERS, _CLOSERS = "([{⟨⦃", ")]}⟩⦄"


_BINDS = re.compile(r"(?<![\w'.])(?:let|have)(?![\w'?!])")  # `let x := v; T` in a type holds a `:=` of its own


def _own_assign(chunk: str) -> int | None:
    """Where the declaration at the start of ``chunk`` has its ``:=``: the first one outside brackets
    that no ``let``/``have`` of the type claims (a binder's default value, ``(h : p := by sorry)``,
    and ``: let y := 2; y = 2`` are not where the statement ends)."""
    depth, claimed = 0, 0
    for i, c in enumerate(chunk):
        if c in _OPENERS:
            depth += 1
        elif c in _CLOSERS:
            depth -= 1
        elif depth == 0 and _BINDS.match(chunk, i):
            claimed += 1
        elif depth == 0 and chunk.startswith(":=", i):
            if not claimed:
                return i
            claimed -= 1
    return None


def _statement_end(chunk: str, scopes: list[str]) -> int | None:
    """Where the statement at the start of ``chunk`` (a declaration and what follows it, up to the
    next one) ends, or None if it is not one (a proved lemma: part of the later theorems' context)."""
    at = _own_assign(chunk)
    if at is None:
        return None
    m = _SORRY_END.match(chunk, at)  # its own `:=` is followed by `sorry` (a `sorry` further in is a proof's)
    if m:
        first, _, later = chunk[m.end():].partition("\n")
        if first.strip():  # `sorry; exact h`, `sorry <;> simp`: a proof that goes on
            return None
        for line in later.splitlines():  # (comments are blanked: they count as blank lines)
            if line.strip():
                # an indented line goes on with the proof; a line at column 0 is the next command
                return None if line[0].isspace() else m.end()
        return m.end()
    end = _without_closers(chunk, scopes)
    return end if _BY_END.fullmatch(chunk, at, end) else None


def _without_trailing_doc_comment(text: str) -> str:
    """``text`` less the ``/-- ... -/`` doc comment it ends with, if it ends with one (then whitespace)."""
    opener = text.rfind("/--")
    if opener >= 0 and not scan(text[opener:])[0].strip() and scan(text[:opener])[1] is None:
        return text[:opener]
    return text


def read_lean_file(path: Path, split: str | None = None, *, missing_ok: bool = False) -> list[Theorem]:
    """The theorems of a ``.lean`` file: each declaration ending in ``:= by sorry`` (or ``:= sorry``).

    Its header is the file's text before the first declaration, plus what stands between the
    earlier ones that is not a statement: proved lemmas (which it may cite, as in Lean) and
    commands (``open``, ``namespace``/``end``). Comments do not count (a theorem commented out, a
    remark after ``sorry``). An ``example`` is named after the file (``p1.lean`` -> ``p1``; several:
    ``p1_1``, ``p1_2``, ...), so that a directory of examples has distinct names.
    ``missing_ok``: a file without any statement gives ``[]`` instead of an error.
    """
    try:
        source = path.read_text(encoding="utf-8-sig")  # (an editor's byte-order mark is not Lean text)
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read ({e})") from None
    code, risk = scan(source)  # string-aware: a "--" inside a string literal is not a comment
    if risk:  # (then where its comments and literals end is not certain, nor where its theorems do)
        raise DatasetError(f"{path}: holds {risk}: leangym cannot be sure Lean reads its comments and literals "
                           "as it does; write it without")
    bare = scan(source, strings=True)[0]  # for matching: no `theorem` inside a string counts
    starts = [m.start() for m in DECLARATION.finditer(bare)] + [len(bare)]
    kinds = [m.group("kind") for m in DECLARATION.finditer(bare)]
    context, statements = [source[:starts[0]]], []  # context: header pieces in file order
    for i, kind in enumerate(kinds):
        start, stop = starts[i], starts[i + 1]
        end = _statement_end(bare[start:stop], _open_scopes(bare[:start]))
        if end is None:
            context.append(source[start:stop])
            continue
        statements.append((start, start + end, kind, "".join(context)))
        # this statement's doc comment ends the piece before it: it documents this theorem, and left in the
        # header of the next ones it would stand before another doc comment or command (Lean refuses that)
        context[-1] = _without_trailing_doc_comment(context[-1])
        context.append(source[start + end:stop])  # commands after it (`open`, `end X`) hold for what follows
    if not statements:
        if missing_ok:
            return []
        raise DatasetError(f"{path}: no theorem/lemma/example ending in ':= by sorry' (found {len(kinds)} "
                           f"declaration{'s' if len(kinds) != 1 else ''}, none a statement to prove)")
    examples = sum(kind == "example" for *_, kind, _ in statements)
    out, n_example = [], 0
    for start, end, kind, header in statements:
        name = ""
        if kind == "example":
            n_example += 1
            name = path.stem if examples == 1 else f"{path.stem}_{n_example}"
        try:
            # as written, comments inside included (as a JSONL copy has it), from its first code character
            first = start + len(code[start:end]) - len(code[start:end].lstrip())
            out.append(Theorem(source[first:end].strip(), name=name, header=header, split=split,
                               extra={"source_file": str(path)}))
        except TheoremError as e:
            raise DatasetError(f"{path}:{source.count(chr(10), 0, start) + 1}: {e}") from None
    names = [t.name for t in out]
    if len(set(names)) < len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise DatasetError(f"{path}: two theorems named {dup!r}")
    return out


def lean_files(root: Path) -> list[Path]:
    """The ``.lean`` files under ``root`` (sorted paths; linked folders followed, each once), not looking
    into hidden directories (``.git``, ``.lake``) nor ``lake-packages``: Lake keeps a built project's
    dependencies there."""
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()  # folders walked, by (device, inode): a linked folder is walked once
    for folder, subdirs, files in os.walk(root, followlinks=True):  # (a linked folder's theorems count too)
        st = os.stat(folder)
        if (st.st_dev, st.st_ino) in seen:
            subdirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        subdirs[:] = [d for d in subdirs if not d.startswith(".") and d not in LAKE_DIRS]  # pruned, not walked
        found += [Path(folder) / f for f in files if f.endswith(".lean")]
    return sorted(p for p in found if p.is_file())


KNOWN_SPLITS = ("test", "valid", "validation", "train", "dev")


def _split_of(rel: Path, theorems: int) -> str | None:
    """The split of a file's theorems, from where it lies: a file or the nearest folder named like a split
    (`MiniF2F/Test/foo.lean`, `MiniF2F/Test.lean`: test; so a second theorem in a held-out file never moves
    it into training); else, as before, the file's name when it holds several theorems, its folder's
    when one."""
    for part in (rel.stem, *reversed(rel.parts[:-1])):
        if part.lower() in KNOWN_SPLITS:
            return part.lower()
    if theorems > 1:
        return rel.stem.lower()
    return rel.parts[-2].lower() if len(rel.parts) > 1 else None


def read_lean_dir(root: Path) -> list[Theorem]:
    """Every ``.lean`` file under ``root`` (see :func:`lean_files`) holding a theorem; names must be unique."""
    files = lean_files(root)
    if not files:
        jsonl = sorted(p.name for p in root.glob("*.jsonl")) if root.is_dir() else []
        hint = f"; for theorems in JSONL pass the file itself: {root / jsonl[0]}" if jsonl else ""
        raise DatasetError(f"{root}: no .lean files{hint}")
    theorems: list[Theorem] = []
    seen: dict[str, Path] = {}
    for f in files:
        found = read_lean_file(f, missing_ok=True)
        rel = f.relative_to(root)
        split = _split_of(rel, len(found))
        for t in found:
            if t.name in seen:
                raise DatasetError(f"{f}: duplicate theorem name {t.name!r} (also in {seen[t.name]})")
            seen[t.name] = f
            theorems.append(dataclasses.replace(t, split=split))
    if not theorems:
        raise DatasetError(f"{root}: no .lean file holds a theorem")
    return theorems
