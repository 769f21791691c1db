"""Dataset rows shared by the dataset tests (test_datasets.py, test_datasets_download.py)."""
from __future__ import annotations

import json
from pathlib import Path

HEADER = "import Mathlib\n\nopen BigOperators Real Nat Topology Rat\n\n"
ROWS = [
    {"name": "mathd_algebra_1", "split": "test", "header": HEADER,
     "formal_statement": "theorem mathd_algebra_1 (x : ℝ) (h : x = 2) : x + 1 = 3 := by sorry"},
    {"name": "aimeI_2000_p7", "split": "valid", "header": HEADER,
     "formal_statement": "theorem aimeI_2000_p7 : (2 : ℕ) + 2 = 4 := by sorry"},
    {"name": "imo_1959_p1", "split": "test", "header": HEADER,
     "formal_statement": "theorem imo_1959_p1 (n : ℕ) (h₀ : 0 < n) :\n  Nat.gcd (21 * n + 4) (14 * n + 3) = 1 := by sorry"},
]
# DeepSeek-Prover-V1.5 shape: `:= by` without sorry, trailing newline, extra fields.
DEEPSEEK_ROW = {"name": "mathd_numbertheory_33", "split": "valid", "informal_prefix": "/-- Find n. -/\n",
                "formal_statement": "theorem mathd_numbertheory_33 (n : ℕ) (h₀ : n < 398) : n = 57 := by\n",
                "goal": "n : ℕ\nh₀ : n < 398\n⊢ n = 57", "header": "import Mathlib\nimport Aesop\n\n"}


def write_jsonl(path: Path, rows: list, raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    for i, text in (raw_lines or {}).items():
        lines.insert(i, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def names(theorems) -> list[str]:
    return [t.name for t in theorems]
