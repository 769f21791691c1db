"""The AND-OR search tree of one proof search: nodes, PUCT selection, backup, proof extraction.

OR nodes are proof states (one Lean branch). Each edge of an OR node is a
tactic that Lean accepted; its result is an AND node over the open branches it
left (none: the tactic proved the goal). Values are ``GAMMA ** steps`` (see
``interfaces``): an edge is worth ``GAMMA * product(its branches)`` (steps are
tactics, summed over branches: each branch costs its own Lean calls), an OR node
the best of its edges.

Status, recomputed (``_refresh``) whenever an edge or a branch changes:
* an edge is *solved* when all its branches are, an OR node when any edge is;
  solved is final, and a solved node is never entered again (the search works
  on what is left);
* a node is *dead* when it has no live edge and the policy has no new tactic
  for it (``exhausted``): widening was capped (``max_tactics``), or
  ``max_empty_evaluations`` evaluations in a row brought nothing new. One empty
  evaluation is not enough: the policy samples, and a sample may hold no
  finished tactic by chance; at the root each one asks for more (``SAMPLE_WIDER``).
  An edge is live when no branch is beyond hope and some open branch is not
  dead (the one to work on: ``hardest_open_child``);
* a dead node *waits* (is not beyond hope) while a tactic of it is held back
  (below) or an edge of it has no branch beyond hope: nothing to do there now,
  but a proof found elsewhere may bring it back to life. Beyond hope is final.

Statistics of a node's edges live in numpy arrays (``N``, ``W``, virtual
visits ``VL``, log-priors ``logp``, ``alive``) so that PUCT is one vectorised
expression per node. Single goals identical but for their case tags share one
node (transposition table), which makes the tree a DAG; so a tactic that picks
its goal by tag (``case left => …``) is never tried on one. States equal up to names
(``leangym.goal_key.alpha_key``) do not share a node (a tactic names ``h₃``),
but count as one below. A tactic back to its own state is refused
(it can never help); one back to an unsolved ancestor is held back, which keeps
the unsolved part acyclic (``integrate``), and added once that ancestor is
solved (``_revive``): it may be the node's only proof; it is dropped once
that ancestor is beyond hope (``_forget``). A tactic whose branches a sibling
already leads to is refused (``intro h₄`` after ``intro h₃``). An edge to a solved node is always
kept: it cannot close a loop that matters, since a solved node is never entered
again and steps strictly fall along a proof (an edge counts 1 + its branches' steps).

Known limits (fuzzed: about 1 provable root in 2,000 random cyclic graphs is
given up, against 3 to 8 in 1,000 when such tactics were refused for good): a
held-back tactic waits for an ancestor the search can no longer reach, because
the only ways to it are an edge dead for good or a solved node (never entered
again); and a node that waits for an ancestor provable only through itself
keeps its hope, so its AND siblings are searched to the end (pruning lost, no
proof). Both need a search that walks cycles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agents.alphaproof.interfaces import GAMMA, Evaluation, value_from_steps
from leangym.backends.types import Outcome, ProofState, TacticResult
from leangym.goal_key import alpha_key, names_a_tag, table_key
from leangym.known_failures import KnownFailures, cites_missing_name
from leangym.proof import ProofTree
from leangym.soundness import normalise_tactic


SAMPLE_WIDER = 4  # after each empty answer, the root asks the policy for 4x as many tactics


@dataclass(frozen=True)
class SearchConfig:
    num_simulations: int = 256  # per theorem; one simulation = one leaf evaluated and its tactics tried
    max_lean_calls: int | None = 2048  # per theorem, the final check included (the session's own Budget applies too)
    max_seconds: float | None = None  # per theorem, wall clock
    num_tactics: int = 8  # tactics tried at a new leaf (the policy's k most probable)
    widen_tactics: int = 8  # new tactics tried each time a node is widened (see new_tactics)
    max_tactics: int = 64  # a node never asks for more than this many
    # a node is exhausted (no more widening; dead once its edges are) after this many evaluations in a row that
    # brought no new tactic: the policy samples, so one sample without a finished tactic proves nothing
    max_empty_evaluations: int = 3
    widen_c: float = 2.0  # widen a node once its visits > widen_c * tactics_tried ** widen_alpha
    widen_alpha: float = 1.5
    c_puct: float = 1.5
    fpu_reduction: float = 0.2  # Q of an unvisited edge = the node's value estimate - this (see puct)
    leaves_per_round: int = 4  # leaves selected per tree per round, kept apart by virtual loss
    lean_threads: int | None = None  # sessions talking to Lean at once (None: all; in-process Lean runs inline)
    # the search re-checks a solved root's proof itself (session.verify, VERIFY_CALLS of the budget); False
    # for a caller that checks every answer itself, off the budget, as the benchmark harness does for all agents
    self_check: bool = True

    @classmethod
    def for_budget(cls, sims: int, num_tactics: int, max_lean_calls: int | None,
                   max_seconds: float | None, self_check: bool = True) -> "SearchConfig":
        """The agent's search at a budget: ``num_tactics`` tried at a new node and at each widening."""
        return cls(num_simulations=sims, max_lean_calls=max_lean_calls, max_seconds=max_seconds,
                   num_tactics=num_tactics, widen_tactics=num_tactics, self_check=self_check)

    def __post_init__(self) -> None:
        # 0 would exhaust every node before its first tactic, select no leaf, or ask for no tactic
        for name in ("max_empty_evaluations", "leaves_per_round", "num_tactics", "widen_tactics", "max_tactics"):
            if getattr(self, name) < 1:
                raise ValueError(f"SearchConfig.{name} must be at least 1, got {getattr(self, name)}")
        # (the prover's own keywords): a string or None would fail only mid-search, at every theorem; NaN never
        # widens and a negative value widens at every visit, without a word
        for name in ("widen_c", "widen_alpha"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not value >= 0:
                raise ValueError(f"SearchConfig.{name} must be a number >= 0, got {value!r}")


_EMPTY_F, _EMPTY_I, _EMPTY_B = np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool)


class Node:
    """An OR node: one proof state and the tactics tried on it."""

    def __init__(self, state: ProofState, key: str, alpha: str):
        self.state, self.text, self.key = state, state.text, key  # key: the table's (the text, tags dropped)
        self.alpha = alpha  # one for states equal up to names (pruning only: see leangym.goal_key)
        self.edge_alphas: set[tuple[str, ...]] = set()  # the alpha keys of each accepted tactic's branches
        self.expanded = False  # evaluated by the policy and its tactics sent to Lean
        self.tactics: list[str] = []  # edge i's tactic ...
        self.children: list[tuple[Node, ...]] = []  # ... and its AND node: the branches it left open
        # per-edge arrays, replaced (never resized in place) when edges are added; shared while empty
        self.logp = _EMPTY_F
        self.N = _EMPTY_I  # finished visits per edge
        self.W = _EMPTY_F  # summed backed-up values per edge
        self.VL = _EMPTY_I  # visits in flight (virtual loss: counted as value 0)
        self.alive = _EMPTY_B
        self.tried: set[str] = set()  # every tactic sent for this state (accepted or not)
        self.rejected: list[str] = []  # ... of which Lean rejected these (an error, not a timeout)
        self.exhausted = False  # the policy has nothing new for this state
        self.empty_evaluations = 0  # evaluations in a row that brought no new tactic (see new_tactics)
        self.steps: int | None = None  # tactic steps to a proof, once solved
        self.dead = False  # no work left here for now (see the module doc; not final)
        self.waiting = False  # dead, but may come back: not beyond hope for the edges into it
        self.deferred = 0  # tactics of this node held back until an ancestor is solved (SearchTree.deferred)
        self.parents: list[tuple[Node, int]] = []  # (node, edge index) for every edge into this node
        self.visits, self.value_sum, self.in_flight = 0, 0.0, 0
        self.pending = False  # a leaf of the current round

    def estimate(self) -> float | None:
        """Current value: exact when solved, 0 while dead, else the mean backed-up value (None: unseen)."""
        if self.steps is not None:
            return value_from_steps(self.steps)
        if self.dead:
            return 0.0
        return self.value_sum / self.visits if self.visits else None


@dataclass
class Leaf:
    """Where one simulation stopped: ``path`` holds (node, edge index) from the root down."""

    path: list[tuple[Node, int]]
    node: Node
    k: int  # how many tactics the node has once this leaf is expanded (more than before: widening)
    ask: int = 0  # how many to ask the policy for (0: k); more once asking brought nothing new

    def __post_init__(self) -> None:
        self.ask = max(self.ask, self.k)


@dataclass
class _Edge:
    """A tactic of ``node`` that Lean accepted and the states it left: an edge to add, or one held back."""

    node: Node
    tactic: str
    logp: float
    states: tuple[ProofState, ...]
    keys: tuple[str, ...]  # the states' table keys (computed once: a state renders its text on every access)
    alphas: tuple[str, ...]  # ... and alpha keys


@dataclass(frozen=True)
class Target:
    """What one expanded OR node teaches the network."""

    state: str
    tactics: tuple[str, ...]
    visit_counts: tuple[int, ...]
    steps_to_go: int | None  # from a solved subtree; None: not solved in this search
    proof_tactic: str | None  # the first tactic of the shortest proof found, if any
    rejected: tuple[str, ...] = ()  # tactics Lean rejected here: the policy's own mistakes (negatives)


class SearchTree:
    def __init__(self, root: ProofState, config: SearchConfig):
        self.config = config
        self.table: dict[str, Node] = {}  # table key (goal text, tags dropped) -> node (transpositions)
        self.by_alpha: dict[str, list[Node]] = {}  # alpha key -> the nodes with it
        self.failed: set[tuple[str, str]] = set()  # (table key, tactic) never to send again
        self.known_failures = KnownFailures()  # what Lean's rejections say about other states of this search
        # tactics refused or held back because they led back to an ancestor (up to names), or where a
        # sibling already leads (up to names)
        self.useless = 0
        self.deferred: dict[str, list[_Edge]] = {}  # unsolved ancestor's key -> tactics waiting for its proof
        self.root = self.node_for(root)

    def node_for(self, state: ProofState, key: str | None = None, alpha: str | None = None) -> Node:
        key = table_key(state) if key is None else key
        if key not in self.table:
            node = self.table[key] = Node(state, key, alpha_key(state) if alpha is None else alpha)
            self.by_alpha.setdefault(node.alpha, []).append(node)
        return self.table[key]

    # ------------------------------------------------------------------ selection
    def select(self) -> Leaf | None:
        """Walk down by PUCT, adding virtual loss; None if it ran into another leaf of this round."""
        cfg, node, path = self.config, self.root, []
        while True:
            if node.pending:
                _revert(path)
                return None
            if not node.expanded:
                k = min(cfg.num_tactics, cfg.max_tactics)
                break
            if wants_widening(node, cfg):
                k = min(len(node.tried) + cfg.widen_tactics, cfg.max_tactics)
                break
            i = int(np.argmax(puct(node, cfg)))
            child = hardest_open_child(node.children[i])
            node.VL[i] += 1
            node.in_flight += 1
            path.append((node, i))
            node = child
        node.pending = True
        node.in_flight += 1
        # the root's favourites all tried: sample wider each time, or a peaked policy ends the search with its
        # budget unspent (after 3 answers of `constructor`, `trivial`, both rejected). Not below: a dead node
        # sends the budget elsewhere (wider everywhere: held-out -6, fresh +6 of 450 on three nets)
        wider = SAMPLE_WIDER ** node.empty_evaluations if node is self.root else 1
        return Leaf(path, node, k, min(k * wider, cfg.max_tactics))  # (k is at most max_tactics)

    def abandon(self, leaf: Leaf) -> None:
        """Undo a selection whose leaf could not be expanded (budget spent)."""
        _revert(leaf.path)
        leaf.node.pending = False
        leaf.node.in_flight -= 1

    # ------------------------------------------------------------------ expansion
    def new_tactics(self, leaf: Leaf, evaluation: Evaluation) -> list[tuple[str, float]]:
        """The policy's tactics for ``leaf`` not tried before and not known to fail, best first.

        A new leaf gets ``num_tactics`` of them, a widened node ``widen_tactics`` more: the
        policy is asked for ``tried + widen_tactics`` so that ``widen_tactics`` new ones can
        be found among them, but its top k of a fresh sample may hold many more untried
        ones, and sending them all would spend the Lean budget on one node.

        The node becomes ``exhausted`` once it reaches ``max_tactics``, or after
        ``max_empty_evaluations`` evaluations in a row with nothing new. Until then an empty
        answer leaves it as it is: a fresh leaf becomes expanded with no edges, and
        :func:`wants_widening` asks the policy again the next time the node is selected.
        """
        node = leaf.node
        fresh: list[tuple[str, float]] = []
        refused = False  # a tactic refused here is new too: as if Lean had rejected it
        single = len(node.state.goals) == 1
        for tactic, lp in zip(evaluation.tactics[: leaf.ask], evaluation.log_priors):
            # as Lean runs it (ProofSession normalises what it sends): two spellings of one tactic
            # are one tactic, tried once, and a proof records the text that Lean checked
            t = normalise_tactic(tactic)
            # (on one goal, a tactic that picks it by tag may fail on another state of this node: a single goal's
            # tag is no part of its key, leangym.goal_key)
            if (t and not (single and names_a_tag(t)) and t not in node.tried and (node.key, t) not in self.failed
                    and all(t != f for f, _ in fresh)):
                if cites_missing_name(t, node.state) or self.known_failures.refuses(node.state, t):  # as if Lean had
                    node.tried.add(t)
                    node.rejected.append(t)
                    self.failed.add((node.key, t))
                    refused = True
                    continue
                fresh.append((t, _finite_log_prior(lp)))
        fresh = fresh[: leaf.k - len(node.tried)]
        node.empty_evaluations = 0 if fresh or refused else node.empty_evaluations + 1
        if (node.empty_evaluations >= self.config.max_empty_evaluations
                or len(node.tried) + len(fresh) >= self.config.max_tactics):
            node.exhausted = True  # widening cannot help any more
        return fresh

    def integrate(self, leaf: Leaf, evaluation: Evaluation, sent: list[tuple[str, float]],
                  results: list[TacticResult]) -> float:
        """Add Lean's answers as edges of ``leaf.node``; returns the leaf's value for backup."""
        node = leaf.node
        node.expanded = True
        node.pending = False  # its tactics are answered: _refresh may now find it dead
        ancestors = _ancestors(node)
        edges = []
        for (tactic, logp), res in zip(sent, results):
            if res.outcome is Outcome.SERVER_FAILURE:
                # transient: the tactic may be proposed and sent again later, so it does not count
                # towards the node's max_tactics (one failed answer must not leave the node dead)
                node.exhausted = node.exhausted and len(node.tried) >= self.config.max_tactics
                continue
            node.tried.add(tactic)
            if res.outcome in (Outcome.REJECTED, Outcome.TIMEOUT):
                self.failed.add((node.key, tactic))
                if res.outcome is Outcome.REJECTED:
                    node.rejected.append(tactic)
                    self.known_failures.learn(node.state, tactic, res.error)
                continue
            edge = _Edge(node, tactic, logp, res.states, tuple(map(table_key, res.states)),
                         tuple(map(alpha_key, res.states)))
            same = tuple(sorted(edge.alphas))
            sibling = same in node.edge_alphas
            node.edge_alphas.add(same)
            # Back to this state (never of use: it needs this state proved first), where a sibling already
            # leads, or to an unsolved ancestor: no progress, and would close a cycle. The last waits for that
            # ancestor's proof. All up to names: `intro h₄` after `intro h₃` is no new tactic.
            if node.alpha in edge.alphas or sibling or self._hold_back(edge, ancestors):
                self.failed.add((node.key, tactic))
                self.useless += 1
                continue
            edges.append((tactic, logp, self._kids(edge)))
        self.add_edges(node, edges)
        self._settle(node)
        if node.steps is not None:
            return value_from_steps(node.steps)
        value = float(evaluation.value)  # the policy's guess, kept to [0, 1] (NaN: nothing known)
        return 0.0 if node.dead or not math.isfinite(value) else min(max(value, 0.0), 1.0)

    def add_edges(self, node: Node, edges: list[tuple[str, float, tuple[Node, ...]]]) -> None:
        """Append (tactic, log-prior, branches) edges: existing edges, statistics and subtrees stay."""
        first, n = len(node.tactics), len(edges)
        for j, (tactic, _, kids) in enumerate(edges):
            node.tactics.append(tactic)
            node.children.append(kids)
            for kid in kids:
                kid.parents.append((node, first + j))
        node.logp = np.concatenate([node.logp, [lp for _, lp, _ in edges]])
        node.N = np.concatenate([node.N, np.zeros(n, np.int64)])
        node.W = np.concatenate([node.W, np.zeros(n)])
        node.VL = np.concatenate([node.VL, np.zeros(n, np.int64)])
        node.alive = np.concatenate([node.alive, np.ones(n, bool)])

    def _kids(self, edge: _Edge) -> tuple[Node, ...]:
        return tuple(self.node_for(s, k, a) for s, k, a in zip(edge.states, edge.keys, edge.alphas))

    def _hold_back(self, edge: _Edge, ancestors: dict[str, list[Node]]) -> bool:
        """Hold ``edge`` back until an unsolved ancestor among its branches (up to names) is solved; False if
        there is none."""
        for alpha in edge.alphas:
            for ancestor in ancestors.get(alpha, ()):
                if ancestor.steps is None:
                    self.deferred.setdefault(ancestor.key, []).append(edge)
                    edge.node.deferred += 1
                    return True
        return False

    def _settle(self, node: Node) -> None:
        """:func:`_refresh` ``node``, add the held-back edges that waited for the nodes it solved, drop those
        that waited for nodes now beyond hope (never solved: the nodes holding them may lose their hope), and so on."""
        work = [node]
        # ends: a node is solved once and beyond hope once, and a held-back edge waits for each branch at most once
        while work:
            solved, hopeless = _refresh(*work)
            work = [n for s in solved for n in self._revive(s)] + [n for h in hopeless for n in self._forget(h)]

    def _forget(self, hopeless: Node) -> list[Node]:
        """Drop the held-back edges that waited for ``hopeless`` (beyond hope is final); returns their nodes."""
        out = []
        for edge in self.deferred.pop(hopeless.key, []):
            edge.node.deferred -= 1
            out.append(edge.node)
        return out

    def _revive(self, solved: Node) -> list[Node]:
        """Add the held-back edges that waited for ``solved``; returns the nodes that got one.

        One that still leads to an unsolved ancestor (the graph grows) waits for that one. A solved node only
        takes one that makes its proof shorter: it is never entered again.
        """
        out = []
        for edge in self.deferred.pop(solved.key, []):
            node = edge.node
            node.deferred -= 1
            known = [self.table.get(k) for k in edge.keys]
            steps = None if any(k is None for k in known) else _edge_steps(tuple(known))
            if node.steps is not None and (steps is None or steps >= node.steps):
                continue
            # (the ancestors are walked only when a branch could be one: an unsolved node of its alpha key
            # in the table; walking them first for every edge made solving a long chain quadratic)
            if (steps is None and any(n.steps is None for a in edge.alphas for n in self.by_alpha.get(a, ()))
                    and self._hold_back(edge, _ancestors(node))):
                continue
            self.add_edges(node, [(edge.tactic, edge.logp, self._kids(edge))])
            out.append(node)
        return out

    # ------------------------------------------------------------------ backup
    def backup(self, leaf: Leaf, value: float) -> None:
        """Propagate ``value`` (of the leaf) to the root; each tactic step multiplies by GAMMA.

        Through an AND node the value is the product of the simulated branch and
        the current estimates of its siblings (unseen siblings do not count yet).
        """
        node = leaf.node
        node.pending = False
        node.in_flight -= 1
        node.visits += 1
        node.value_sum += value
        child = node
        for parent, i in reversed(leaf.path):
            sibs = [e for c in parent.children[i] if c is not child and (e := c.estimate()) is not None]
            value = GAMMA * value * math.prod(sibs)  # GAMMA ** (1 + the branches' steps, summed)
            parent.VL[i] -= 1
            parent.N[i] += 1
            parent.W[i] += value
            parent.in_flight -= 1
            parent.visits += 1
            parent.value_sum += value
            child = parent

    # ------------------------------------------------------------------ outputs
    def proof(self, node: Node | None = None) -> ProofTree:
        """The shortest proof found below a solved ``node`` (the root by default)."""
        node = node or self.root
        i = _best_edge(node)
        kids = node.children[i]
        return ProofTree.join(node.tactics[i], [k.state for k in kids], [self.proof(k) for k in kids])

    def targets(self) -> list[Target]:
        """One target per expanded node, the root first."""
        out = []
        for node in self.table.values():
            if not node.expanded:
                continue
            proof_tactic = node.tactics[_best_edge(node)] if node.steps is not None else None
            out.append(Target(node.text, tuple(node.tactics), tuple(int(n) for n in node.N),
                              node.steps, proof_tactic, tuple(node.rejected)))
        return out


# ---------------------------------------------------------------------- per-node functions
def puct(node: Node, cfg: SearchConfig) -> np.ndarray:
    """PUCT score of every edge of ``node`` (-inf for dead edges).

    Priors: softmax of the policy's log-priors over the live edges. Unvisited
    edges (FPU): Q = node's value estimate - ``fpu_reduction``, i.e. a new
    tactic is assumed a little worse than what the node is worth so far, so
    the search deepens good lines before trying every sibling.
    """
    n = node.N + node.VL
    logits = np.where(node.alive, node.logp, -np.inf)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    fpu = (node.estimate() or 0.0) - cfg.fpu_reduction
    q = np.where(n > 0, node.W / np.maximum(n, 1), fpu)
    u = cfg.c_puct * p * math.sqrt(n.sum() + 1) / (1 + n)
    return np.where(node.alive, q + u, -np.inf)


def hardest_open_child(kids: tuple[Node, ...]) -> Node:
    """The branch to work on in a live AND node: unsolved and not dead, none in flight first, then lowest value.

    Unseen branches count as hardest (their value is unknown, and the AND node
    is no surer than its hardest branch); a branch with a simulation in flight is
    passed over so that one round spreads over the branches. A dead branch that
    waits is passed over too: the work it waits for is elsewhere (a sibling, say).
    """
    open_ = [c for c in kids if c.steps is None and not c.dead]
    return min(open_, key=lambda c: (c.in_flight, -1.0 if c.estimate() is None else c.estimate()))


def wants_widening(node: Node, cfg: SearchConfig) -> bool:
    """Progressive widening: ask the policy for more tactics at heavily visited (or stuck) nodes."""
    if node.exhausted:
        return False
    return not node.alive.any() or node.visits > cfg.widen_c * max(1, len(node.tried)) ** cfg.widen_alpha


def _edge_steps(kids: tuple[Node, ...]) -> int | None:
    if any(k.steps is None for k in kids):
        return None
    return 1 + sum(k.steps for k in kids)  # tactics left = Lean calls left: every branch needs its own


def _best_edge(node: Node) -> int:
    assert node.steps is not None, "no proof: node not solved"
    return min((i for i, kids in enumerate(node.children) if _edge_steps(kids) is not None),
               key=lambda i: _edge_steps(node.children[i]))


def _hopeful(kids: tuple[Node, ...]) -> bool:
    """No branch is beyond hope (dead and not waiting)."""
    return not any(k.dead and not k.waiting for k in kids)


def _live(kids: tuple[Node, ...]) -> bool:
    """Worth selecting: no branch is beyond hope, and an open branch is not dead (one to work on)."""
    return _hopeful(kids) and any(k.steps is None and not k.dead for k in kids)


def _refresh(*nodes: Node) -> tuple[list[Node], list[Node]]:
    """Recompute the status (steps, dead, waiting) of ``nodes`` and pass changes on to their ancestors, both
    ways (a dead node comes back when it gets an edge or a branch comes back); returns the nodes it solved
    and the nodes it found beyond hope.

    A worklist, not recursion: a change may travel up a chain of any length. It ends: a status is a function
    of the node's own fields and its branches' statuses, the unsolved nodes' edges form a DAG (held-back edges
    are not edges), and a solved node's steps only fall.
    """
    work, solved, hopeless = list(nodes), [], []
    while work:
        node = work.pop()
        before = node.steps, node.dead, node.waiting
        was_hopeless = node.dead and not node.waiting
        node.alive = np.array([_live(kids) for kids in node.children], bool)
        best = min((s for kids in node.children if (s := _edge_steps(kids)) is not None), default=None)
        if best is not None and (node.steps is None or best < node.steps):
            solved += [node] if node.steps is None else []
            node.steps = best
        # (not while pending: the node's own new tactics are still on their way to Lean, and
        # `exhausted` was set when they were chosen; its integrate() refreshes it with them)
        node.dead = node.steps is None and node.exhausted and not node.alive.any() and not node.pending
        node.waiting = node.dead and (node.deferred > 0 or any(_hopeful(kids) for kids in node.children))
        if node.dead and not node.waiting and not was_hopeless:
            hopeless.append(node)
        if (node.steps, node.dead, node.waiting) != before:
            work.extend(parent for parent, _ in node.parents)
    return solved, hopeless


def _finite_log_prior(logp: float) -> float:
    """A policy's log-prior made safe for PUCT: NaN or -inf -> a very unlikely tactic, +inf -> certain."""
    logp = float(logp)
    if math.isnan(logp) or logp == -math.inf:
        return -1e3
    return min(logp, 0.0)


def _ancestors(node: Node) -> dict[str, list[Node]]:
    """``node`` and every node above it, by alpha key."""
    seen, stack, out = {node.key}, [node], {node.alpha: [node]}
    while stack:
        for parent, _ in stack.pop().parents:
            if parent.key not in seen:
                seen.add(parent.key)
                stack.append(parent)
                out.setdefault(parent.alpha, []).append(parent)
    return out


def _revert(path: list[tuple[Node, int]]) -> None:
    for node, i in path:
        node.VL[i] -= 1
        node.in_flight -= 1
