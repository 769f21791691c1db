"""STP-style self-play (Dong & Ma, 2025) on ``ConjectureProve-v0``: a conjecturer and the AlphaProof
agent's prover trained against each other (``python -m agents.stp.train``; docs/self-play.md)."""
