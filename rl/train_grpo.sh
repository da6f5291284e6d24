#!/usr/bin/env bash
# Stage 2: GRPO on composed compoenv tasks with OpenRLHF 0.11 (Ray + vLLM engines); each of the
# n samples of a prompt is a multi-turn episode scored by the completion-focused group reward
# (rl/openrlhf_agent.py). Single node, everything colocated on GPUS GPUs (default 8 x 80 GB for
# a 4B model); extra OpenRLHF flags go after the script's name.
#
#   MODEL=checkpoints/compoenv-sft TASKS=data/tasks.jsonl bash rl/train_grpo.sh
#
# Ray starts inside the run (workers inherit the COMPOENV_* variables below). On an existing
# cluster, submit with `ray job submit --runtime-env-json '{"env_vars": {...}}'` instead.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
MODEL="${MODEL:-Qwen/Qwen3-4B-Instruct-2507}"
TASKS="${TASKS:-$ROOT/data/tasks.jsonl}"
PROMPTS="${PROMPTS:-$ROOT/data/openrlhf_prompts.jsonl}"
SAVE="${SAVE:-$ROOT/checkpoints/compoenv-grpo}"
GPUS="${GPUS:-8}"
N_SAMPLES="${N_SAMPLES:-8}"
NUM_TASKS="${NUM_TASKS:-2000}"
export COMPOENV_MODE="${COMPOENV_MODE:-direct}"
export COMPOENV_MAX_STEPS="${COMPOENV_MAX_STEPS:-16}"
# COMPOENV_GROUP_SIZE stays unset: groups are detected, so --eval.n_samples_per_prompt may differ

mkdir -p "$(dirname "$TASKS")" "$(dirname "$PROMPTS")" "$SAVE"
if [ ! -f "$TASKS" ]; then
  "$PYTHON" -m compoenv.cli generate --num "$NUM_TASKS" --seed 0 -o "$TASKS"
fi
# messages with the tool listing in the system turn, rendered by --data.apply_chat_template
"$PYTHON" -m compoenv.cli export openrlhf --tasks "$TASKS" -o "$PROMPTS" --mode "$COMPOENV_MODE"

"$PYTHON" -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$MODEL" \
  --actor.num_nodes 1 --actor.num_gpus_per_node "$GPUS" \
  --ref.num_nodes 1 --ref.num_gpus_per_node "$GPUS" \
  --vllm.num_engines "$GPUS" --vllm.tensor_parallel_size 1 \
  --vllm.gpu_memory_utilization 0.6 --vllm.enable_prefix_caching --vllm.enable_sleep \
  --train.colocate_all --ds.enable_sleep \
  --train.agent_func_path "$ROOT/rl/openrlhf_agent.py" \
  --data.prompt_dataset "$PROMPTS" --data.input_key prompt --data.label_key label \
  --data.apply_chat_template --data.max_len 16384 --rollout.max_new_tokens 2048 \
  --algo.advantage.estimator group_norm --rollout.n_samples_per_prompt "$N_SAMPLES" \
  --rollout.batch_size 32 --rollout.micro_batch_size 4 --rollout.temperature 1.0 \
  --train.batch_size 256 --train.micro_batch_size 2 --train.max_epochs 1 --train.num_episodes 1 \
  --algo.kl.init_coef 0.001 --algo.kl.use_loss --algo.kl.estimator k3 \
  --actor.adam.lr 1e-6 --actor.gradient_checkpointing_enable \
  --ds.zero_stage 3 --ds.param_dtype bf16 --ds.packing_samples \
  --ckpt.output_dir "$SAVE" --ckpt.path "$SAVE/ds" --ckpt.save_steps 20 --ckpt.save_hf \
  --logger.logging_steps 1 --train.seed 42 \
  "$@"
