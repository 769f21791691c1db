"""leangym: Gymnasium environments for Lean 4 theorem proving."""
