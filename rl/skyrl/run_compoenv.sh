#!/usr/bin/env bash
# GRPO on compoenv tasks with SkyRL (skyrl 0.3 with its fsdp and vllm extras, Python >= 3.12,
# and compoenv with the skyrl extra in the same environment). Each of the n samples of a prompt
# is a multi-turn episode of the "compoenv" env class; rl/skyrl/main_compoenv.py gives each
# sample the completion-focused reward over its group. Single node, colocated on NUM_GPUS GPUs
# (4 x 80 GB for a 1.5-4B model); extra SkyRL overrides go after the script's name.
#
#   TASKS=data/tasks.jsonl MODEL=Qwen/Qwen3-4B-Instruct-2507 bash rl/skyrl/run_compoenv.sh
#
# The tool listing makes prompts long (a few thousand tokens): trainer.max_prompt_length and
# generator.max_input_length are sized for it. generator.max_turns bounds the actions of an
# episode (the env truncates and scores there); keep it above the longest solution.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
MODEL="${MODEL:-Qwen/Qwen3-4B-Instruct-2507}"
TASKS="${TASKS:-$ROOT/data/tasks.jsonl}"
DATA_DIR="${DATA_DIR:-$ROOT/data/skyrl}"
MODE="${MODE:-direct}"
NUM_GPUS="${NUM_GPUS:-4}"
N_SAMPLES="${N_SAMPLES:-8}"
MAX_TURNS="${MAX_TURNS:-16}"

if [ ! -f "$TASKS" ]; then
  mkdir -p "$(dirname "$TASKS")"
  "$PYTHON" -m compoenv.cli generate --num 2000 --seed 0 -o "$TASKS"
fi
"$PYTHON" "$ROOT/rl/skyrl/prepare_data.py" --tasks "$TASKS" --mode "$MODE" --val-size 64 \
  --output-dir "$DATA_DIR"

"$PYTHON" "$ROOT/rl/skyrl/main_compoenv.py" \
  data.train_data="['$DATA_DIR/train.parquet']" \
  data.val_data="['$DATA_DIR/validation.parquet']" \
  environment.env_class=compoenv \
  environment.skyrl_gym.max_env_workers=32 \
  trainer.algorithm.advantage_estimator=grpo \
  trainer.policy.model.path="$MODEL" \
  trainer.placement.colocate_all=true \
  trainer.strategy=fsdp \
  trainer.placement.policy_num_gpus_per_node="$NUM_GPUS" \
  trainer.placement.ref_num_gpus_per_node="$NUM_GPUS" \
  generator.inference_engine.num_engines="$NUM_GPUS" \
  generator.inference_engine.tensor_parallel_size=1 \
  generator.inference_engine.backend=vllm \
  generator.inference_engine.run_engines_locally=true \
  generator.inference_engine.gpu_memory_utilization=0.7 \
  generator.batched=false \
  generator.use_conversation_multi_turn=true \
  generator.max_turns="$MAX_TURNS" \
  generator.n_samples_per_prompt="$N_SAMPLES" \
  generator.sampling_params.max_generate_length=1024 \
  generator.max_input_length=24576 \
  trainer.max_prompt_length=8192 \
  trainer.epochs=1 \
  trainer.train_batch_size=64 \
  trainer.policy_mini_batch_size=32 \
  trainer.micro_forward_batch_size_per_gpu=4 \
  trainer.micro_train_batch_size_per_gpu=2 \
  trainer.eval_batch_size=64 \
  trainer.eval_interval=10 \
  trainer.ckpt_interval=20 \
  trainer.policy.optimizer_config.lr=1.0e-6 \
  trainer.algorithm.use_kl_loss=true \
  trainer.logger=console \
  trainer.project_name=compoenv \
  trainer.run_name=compoenv-grpo \
  "$@"
