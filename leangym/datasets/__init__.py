"""Theorem sets: miniF2F, the PropLogic generator (``proplogic``) and its held-out set, JSONL and ``.lean`` files.

    from leangym.datasets import load_theorems
    test = load_theorems("minif2f", split="test")
    mine = load_theorems("path/to/theorems.jsonl")
"""
from leangym.datasets.download import DownloadError, cache_dir, fetch
from leangym.datasets.lean_files import read_lean_dir, read_lean_file
from leangym.datasets.minif2f import DEFAULT_URL as MINIF2F_URL
from leangym.datasets.minif2f import category, load_minif2f
from leangym.datasets.rows import DatasetError, read_jsonl
from leangym.datasets.theorem_sets import category_of, check_spec, load_theorems

__all__ = ["load_theorems", "check_spec", "load_minif2f", "read_jsonl", "read_lean_dir", "read_lean_file", "category",
           "category_of", "fetch", "cache_dir", "DatasetError", "DownloadError", "MINIF2F_URL"]
