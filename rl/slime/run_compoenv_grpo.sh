#!/usr/bin/env bash
# GRPO on compoenv tasks with slime (https://github.com/THUDM/slime), run from slime's checkout:
#   bash /path/to/compoenv/rl/slime/run_compoenv_grpo.sh
# Episodes are played by compoenv.integrations.slime.generate through slime's SGLang router; each
# prompt's group of 8 gets compoenv's completion-focused reward (--group-rm). See
# docs/frameworks/slime.md. Model flags: slime's scripts/models/<model>.sh.
set -euo pipefail

MODEL=${MODEL:-/root/Qwen3-4B}                      # HF checkpoint (tokenizer + chat template)
TASKS=${TASKS:-tasks.jsonl}                         # compoenv generate -n 2000 -o tasks.jsonl
PROMPTS=${PROMPTS:-/tmp/compoenv_slime_prompts.jsonl}
export COMPOENV_MODE=${COMPOENV_MODE:-direct}       # direct or gateway
export COMPOENV_MAX_STEPS=${COMPOENV_MAX_STEPS:-20}
export COMPOENV_TOOL_FORMAT=${COMPOENV_TOOL_FORMAT:-hermes}

# one row per task: prompt (the opening messages) and label (the task JSON)
compoenv export openrlhf --tasks "$TASKS" -o "$PROMPTS" --mode "$COMPOENV_MODE"

source scripts/models/qwen3-4B.sh                   # MODEL_ARGS for the checkpoint above

python3 train.py \
    --actor-num-nodes 1 --actor-num-gpus-per-node "${NUM_GPUS:-8}" --colocate \
    "${MODEL_ARGS[@]}" \
    --hf-checkpoint "$MODEL" --ref-load "${REF_LOAD:-/root/Qwen3-4B_torch_dist}" \
    --prompt-data "$PROMPTS" --input-key prompt --label-key label --apply-chat-template \
    --custom-generate-function-path compoenv.integrations.slime.generate \
    --custom-rm-path compoenv.integrations.slime.reward --group-rm \
    --num-rollout 500 --rollout-batch-size 32 --n-samples-per-prompt 8 \
    --rollout-max-response-len 2048 --rollout-temperature 1.0 --global-batch-size 256 \
    --advantage-estimator grpo --eps-clip 0.2 --eps-clip-high 0.28 \
    --optimizer adam --lr 1e-6 --lr-decay-style constant --weight-decay 0.1 \
    --rollout-num-gpus-per-engine 2 --sglang-mem-fraction-static 0.7 \
    --use-dynamic-batch-size --max-tokens-per-gpu 9216
