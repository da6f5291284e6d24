#!/usr/bin/env bash
# GRPO on composed compoenv tasks with verl 0.9: every rollout is a multi-turn episode played by
# compoenv's agent loop (rl/verl/agent_loop.yaml) through verl's vLLM servers, scored by the
# task's rubric. One node, FSDP, GPUS GPUs (default 8 x 80 GB for a 4B model); extra verl
# overrides (key=value) go after the script's name.
#
#   MODEL=checkpoints/compoenv-sft TASKS=data/tasks.jsonl bash rl/verl/train_grpo_verl.sh
#
# Needs verl[vllm] 0.9 and compoenv in the same environment on every node.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
MODEL="${MODEL:-Qwen/Qwen3-4B-Instruct-2507}"
TASKS="${TASKS:-$ROOT/data/tasks.jsonl}"
VAL_TASKS="${VAL_TASKS:-$ROOT/data/val_tasks.jsonl}"
DATA="${DATA:-$ROOT/data/verl}"
SAVE="${SAVE:-$ROOT/checkpoints/compoenv-grpo-verl}"
GPUS="${GPUS:-8}"
N_SAMPLES="${N_SAMPLES:-8}"
NUM_TASKS="${NUM_TASKS:-2000}"
MODE="${MODE:-direct}"

mkdir -p "$(dirname "$TASKS")" "$DATA" "$SAVE"
if [ ! -f "$TASKS" ]; then
  "$PYTHON" -m compoenv.cli generate --num "$NUM_TASKS" --seed 0 -o "$TASKS"
fi
if [ ! -f "$VAL_TASKS" ]; then
  "$PYTHON" -m compoenv.cli generate --num 128 --seed 1 -o "$VAL_TASKS"
fi
# one row per task: the task JSON in extra_info, agent_name=compoenv
"$PYTHON" - "$TASKS" "$VAL_TASKS" "$DATA" "$MODE" <<'PY'
import sys
from compoenv.integrations.verl_data import write_verl_dataset
from compoenv.task import load_tasks
tasks, val_tasks, data, mode = sys.argv[1:]
for source, split in ((tasks, "train"), (val_tasks, "test")):
    count = write_verl_dataset(load_tasks(source), f"{data}/{split}.parquet", mode=mode,
                               split=split)
    print(f"{count} rows -> {data}/{split}.parquet", file=sys.stderr)
PY

"$PYTHON" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  algorithm.use_kl_in_reward=False \
  data.train_files="$DATA/train.parquet" \
  data.val_files="$DATA/test.parquet" \
  data.train_batch_size=64 \
  data.max_prompt_length=8192 \
  data.max_response_length=8192 \
  data.filter_overlong_prompts=True \
  data.truncation=error \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.model.use_remove_padding=True \
  actor_rollout_ref.model.enable_gradient_checkpointing=True \
  actor_rollout_ref.actor.optim.lr=1e-6 \
  actor_rollout_ref.actor.ppo_mini_batch_size=32 \
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
  actor_rollout_ref.actor.use_kl_loss=True \
  actor_rollout_ref.actor.kl_loss_coef=0.001 \
  actor_rollout_ref.actor.kl_loss_type=low_var_kl \
  actor_rollout_ref.actor.entropy_coeff=0 \
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.n="$N_SAMPLES" \
  actor_rollout_ref.rollout.temperature=1.0 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$ROOT/rl/verl/agent_loop.yaml" \
  actor_rollout_ref.rollout.agent.default_agent_loop=compoenv \
  trainer.critic_warmup=0 \
  trainer.logger='["console"]' \
  trainer.project_name=compoenv \
  trainer.experiment_name=grpo-verl \
  trainer.n_gpus_per_node="$GPUS" \
  trainer.nnodes=1 \
  trainer.save_freq=20 \
  trainer.test_freq=20 \
  trainer.default_local_dir="$SAVE" \
  trainer.total_epochs=1 \
  "$@"
