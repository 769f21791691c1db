#!/bin/bash
# Distributed AlphaProof training on SLURM: the learner on the first node, actors on the others.
#
#   sbatch --nodes=5 scripts/slurm_alphaproof.sh --actors 512 --theorems minif2f
#
# Node 0: torchrun over its GPUs (a DDP learner, every rank serving inference), bound to
# 0.0.0.0:$PORT with CurveZMQ keys (made once, in the shared $KEYS directory).
# Nodes 1..N-1: a LeanTree server each ($LEAN_SERVER_CMD; the simulated one by default) and one
# actor process per core, each leasing from its own node's server. Actors retry until the
# learner answers, so the start order does not matter; extra arguments go to the learner.
#SBATCH --job-name=alphaproof
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
#SBATCH --time=24:00:00
#SBATCH --output=alphaproof-%j.out
set -euo pipefail

PORT=${PORT:-5555}
KEYS=${KEYS:-$PWD/keys}
GPUS=${GPUS:-$(nvidia-smi -L 2>/dev/null | wc -l)}
SEARCHES_PER_ACTOR=${SEARCHES_PER_ACTOR:-16}
LEAN_PORT=${LEAN_PORT:-8000}
LEAN_SERVER_CMD=${LEAN_SERVER_CMD:-"python -m leangym.sim.server --port $LEAN_PORT --factorized --max-processes 4096"}

nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
learner=${nodes[0]}
[ -f "$KEYS/server.key_secret" ] || python -m agents.alphaproof.keys "$KEYS"

# the learner: rank 0 of torchrun binds the coordinator's port; the actors below connect to it
if [ "$GPUS" -gt 0 ]; then
    launch=(torchrun --standalone --nproc_per_node="$GPUS" -m agents.alphaproof.train --device cuda)
else
    launch=(python -m agents.alphaproof.train)
fi
# (its own Lean server replays the warm start's reference proofs)
srun --nodes=1 --ntasks=1 -w "$learner" bash -c "$LEAN_SERVER_CMD & sleep 5; exec \"\$@\"" learner \
    "${launch[@]}" --actor-procs 0 --bind "0.0.0.0:$PORT" --keys "$KEYS" --server "http://127.0.0.1:$LEAN_PORT" "$@" &
learner_job=$!

# actor nodes: a Lean server, then one actor process per core (minus one for the server)
for node in "${nodes[@]:1}"; do
    srun --nodes=1 --ntasks=1 -w "$node" bash -c "
        $LEAN_SERVER_CMD &
        cores=\$(nproc); procs=\$(( cores > 1 ? cores - 1 : 1 ))
        for i in \$(seq 1 \$procs); do
            OMP_NUM_THREADS=1 python -m agents.alphaproof.actor --connect tcp://$learner:$PORT --keys $KEYS \
                --actors $SEARCHES_PER_ACTOR --server http://127.0.0.1:$LEAN_PORT --name $node-\$i &
        done
        wait" &
done

wait "$learner_job"   # the run is over when the learner is; actors were told to stop
scancel --signal=TERM "$SLURM_JOB_ID" 2>/dev/null || true
