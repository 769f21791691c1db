#!/bin/bash
# What only a GPU machine can check, as one short script: the AlphaProof trainer with the network on
# CUDA (one process, then actor processes feeding the GPU's inference service), a resume on the GPU,
# a DDP learner over the GPUs under torchrun (NCCL; needs 2 or more), a GPU checkpoint proving on
# CPU, and the distributed benchmark's scaling and batch fill with the network off the actors' cores.
#
#   bash scripts/device_check.sh [OUT_DIR]            # on the GPU machine (OUT_DIR: /tmp/device-check)
#   DEVICE=cpu BENCH=0 bash scripts/device_check.sh   # the same steps on CPU (gloo): checks the script
#
# Each step's log is OUT_DIR/<step>.log; a failed step is reported and the next one still runs.
# The exit status is the number of failed steps.
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-cuda}
BENCH=${BENCH:-1}
OUT=${1:-/tmp/device-check}
mkdir -p "$OUT"
GPUS=$(python -c "import torch; print(torch.cuda.device_count())")
RANKS=$([ "$DEVICE" = cpu ] && echo 2 || echo "$GPUS")
TINY=(--actors 16 --sims 4 --lean-calls 16 --eval-lean-calls 16 --num-tactics 2 --batch-size 8 --learn-steps 2
      --warmup-steps 60 --warmup-theorems 64 --eval-size 8 --eval-every 2 --iterations 2 --replay-size 2000
      --max-tactic-tokens 16 --no-progress --logdir "" --seed 0 --device "$DEVICE" --overwrite)
failed=0

step() {  # step NAME SECONDS COMMAND...: run it, say how it ended
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    if timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; then
        echo "ok      $name ($((SECONDS - t0)) s)"
    else
        echo "FAILED  $name (exit $?, $((SECONDS - t0)) s): last lines of $OUT/$name.log"
        tail -n 15 "$OUT/$name.log" | sed 's/^/    /'
        failed=$((failed + 1))
    fi
}

python -c "import torch; print('torch', torch.__version__, '| cuda', torch.version.cuda, '| GPUs', \
torch.cuda.device_count(), [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])"
echo "device $DEVICE, $RANKS DDP rank(s), $(nproc) cores, logs in $OUT"

step single 240 python -m agents.alphaproof.train "${TINY[@]}" --actor-procs 0 --checkpoint-dir "$OUT/single"
step actors 240 python -m agents.alphaproof.train "${TINY[@]}" --actor-procs 2 --checkpoint-dir "$OUT/actors"
step resume 240 python -m agents.alphaproof.train --resume "$OUT/actors" --iterations 3 --no-progress
if [ "$RANKS" -ge 2 ]; then
    step ddp 300 torchrun --standalone --nproc_per_node=2 -m agents.alphaproof.train "${TINY[@]}" --actor-procs 2 \
        --checkpoint-dir "$OUT/ddp"
    grep -q "inference on 2 rank(s)" "$OUT/ddp.log" || { echo "FAILED  ddp: not 2 inference ranks"; failed=$((failed + 1)); }
else
    echo "skipped ddp: $GPUS GPU(s); NCCL takes one rank per GPU, so a DDP check needs 2"
fi
# a GPU run's checkpoint on CPU (exit 1 is "no proof found": the check is that it loads and searches)
step prove-on-cpu 120 bash -c "python -m agents.alphaproof.prove --checkpoint '$OUT/actors' --device cpu \
    --lean-calls 32 --theorem 'theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry'; [ \$? -le 1 ]"
if [ "$BENCH" = 1 ]; then
    step bench 420 python benchmarks/bench_distributed.py --only scaling --device "$DEVICE" --per-proc 64 \
        --procs 1 2 4 --fill-searches 256 --fill-procs 4 --iterations 3 --sims 8 --lean-calls 24 \
        --warmup-steps 150 --out "$OUT/distributed_$DEVICE.md"
    [ -f "$OUT/distributed_$DEVICE.md" ] && cat "$OUT/distributed_$DEVICE.md"
fi
for run in single actors resume ddp; do  # the held-out line each run printed
    [ -f "$OUT/$run.log" ] && grep -h "^held-out solve rate:" "$OUT/$run.log" | sed "s/^/$run: /"
done
echo "$failed step(s) failed"
exit "$failed"
