"""Agents over leangym: AlphaProof-style training (``agents.alphaproof``) and STP self-play (``agents.stp``).

They need the ``agents`` extra (torch, tokenizers, pyzmq): a command run without it says so in one
``error:`` line (exit status 2), as every leangym tool does, instead of a traceback.
"""
import sys
from importlib.util import find_spec

_NEEDS = {"torch": "torch", "tokenizers": "tokenizers", "zmq": "pyzmq"}  # module -> package
_missing = [package for module, package in _NEEDS.items() if find_spec(module) is None]
if _missing:
    _why = (f"the agents need {', '.join(_missing)}: pip install 'leangym[agents]' "
            "(from a checkout: pip install -e '.[agents]')")
    if sys.argv[:1] == ["-m"]:  # (python -m agents...: a command is being started)
        print(f"error: {_why}", file=sys.stderr)
        sys.exit(2)
    raise ModuleNotFoundError(_why)
