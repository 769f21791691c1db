"""A theorem to prove: a Lean statement ending in ``:= by sorry`` plus the header before it."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

_DECL = re.compile(r"^\s*(?:@\[[^\]]*\]\s*)?(?:private\s+|protected\s+)?(theorem|lemma|example)\b\s*([^\s(\[{:]*)", re.M)
_TAIL = re.compile(r":=\s*by(\s+sorry)?\s*$")
_OTHER_DECL = re.compile(r"^\s*(?:axiom|def|abbrev|instance|#\w+)\b", re.M)


class TheoremError(ValueError):
    """A statement that leangym cannot turn into a proof goal."""


@dataclass(frozen=True)
class Theorem:
    """One statement. ``formal_statement`` always ends in ``:= by sorry`` (normalised on creation).

    Statements ending in ``:= by`` (the DeepSeek-Prover variant) are accepted,
    ``example`` gets a fresh name so that ``#print axioms`` can name it.
    """

    formal_statement: str
    name: str = ""
    header: str = ""
    split: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        stmt = self.formal_statement.strip()
        decl = _DECL.search(stmt)
        if decl is None:
            raise TheoremError(f"expected a 'theorem NAME ... := by sorry' statement, got {stmt[:120]!r}")
        if not _TAIL.search(stmt):
            raise TheoremError(f"statement must end with ':= by sorry' (or ':= by'): {stmt[-80:]!r}")
        if len(_DECL.findall(stmt)) > 1 or _OTHER_DECL.search(stmt):
            raise TheoremError("a statement holds exactly one theorem; put definitions and lemmas it needs "
                               f"in `header`: {stmt[:120]!r}")
        stmt = _TAIL.sub(":= by sorry", stmt)
        kind, name = decl.group(1), decl.group(2)
        if kind == "example" or not name:
            name = self.name or "leangym_example"
            stmt = stmt[: decl.start(1)] + f"theorem {name}" + stmt[decl.end(1):]
        object.__setattr__(self, "formal_statement", stmt)
        object.__setattr__(self, "name", self.name or name)
        object.__setattr__(self, "decl_name", name)

    def renamed(self, decl_name: str) -> "Theorem":
        """The same statement, declared as ``decl_name``."""
        decl = _DECL.search(self.formal_statement)
        stmt = self.formal_statement[: decl.start(2)] + decl_name + self.formal_statement[decl.end(2):]
        return dataclasses.replace(self, formal_statement=stmt)

    @property
    def preamble(self) -> str:
        """The header without ``import`` lines: a leased process has run its imports already,
        and the REPL rejects ``import`` after the first command."""
        return "".join(l for l in self.header.splitlines(keepends=True) if not l.lstrip().startswith("import "))

    @property
    def statement_without_proof(self) -> str:
        """The statement up to and including ``:= by``."""
        return _TAIL.sub(":= by", self.formal_statement)

    def source_with_proof(self, script: str) -> str:
        """Preamble + statement with ``script`` (a tactic block) in place of ``sorry``."""
        body = "\n".join("  " + line if line.strip() else line for line in script.splitlines())
        return f"{self.preamble}{self.statement_without_proof}\n{body}\n"

    @property
    def source_with_sorry(self) -> str:
        """What ``proof_from_sorry`` gets: preamble + statement."""
        return f"{self.preamble}{self.formal_statement}"

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Theorem":
        """From a ``{name, header, formal_statement, [split], ...}`` mapping (miniF2F JSONL shape)."""
        if "formal_statement" not in row:
            raise TheoremError(f"row has no 'formal_statement' field (keys: {sorted(row)})")
        known = {"name", "header", "formal_statement", "split"}
        return cls(
            formal_statement=str(row["formal_statement"]),
            name=str(row.get("name") or ""),
            header=str(row.get("header") or ""),
            split=row.get("split"),
            extra={k: v for k, v in row.items() if k not in known},
        )
