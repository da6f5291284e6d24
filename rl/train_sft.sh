#!/usr/bin/env bash
# Stage 1: supervised fine-tuning on verified trajectories (`compoenv sft`) with OpenRLHF 0.11's
# multi-turn SFT: the loss covers every assistant turn (tool calls and the final answer), not
# the system prompt, the request or the tool results. DeepSpeed on GPUS GPUs (default 8).
#
#   MODEL=Qwen/Qwen3-4B-Instruct-2507 SFT=data/sft.jsonl bash rl/train_sft.sh
#
# OpenRLHF renders messages without `tools`, so `compoenv export openrlhf-sft` puts each
# trajectory's tool listing into its system message and its calls into the assistant text as
# <tool_call> blocks, exactly as the RL prompts (rl/train_grpo.sh) list tools and ask for calls.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
MODEL="${MODEL:-Qwen/Qwen3-4B-Instruct-2507}"
SFT="${SFT:-$ROOT/data/sft.jsonl}"
DATA="${DATA:-$ROOT/data/openrlhf_sft.jsonl}"
SAVE="${SAVE:-$ROOT/checkpoints/compoenv-sft}"
GPUS="${GPUS:-8}"
NUM_TASKS="${NUM_TASKS:-4000}"
export COMPOENV_MODE="${COMPOENV_MODE:-direct}"

mkdir -p "$(dirname "$SFT")" "$(dirname "$DATA")" "$SAVE"
if [ ! -f "$SFT" ]; then  # oracle trajectories on tasks of their own (RL composes with seed 0)
  "$PYTHON" -m compoenv.cli sft --num "$NUM_TASKS" --seed 1 --mode "$COMPOENV_MODE" -o "$SFT"
fi
"$PYTHON" -m compoenv.cli export openrlhf-sft --sft "$SFT" -o "$DATA"

deepspeed --num_gpus "$GPUS" --module openrlhf.cli.train_sft \
  --model.model_name_or_path "$MODEL" \
  --data.dataset "$DATA" --data.input_key messages --data.multiturn --data.apply_chat_template \
  --data.max_len 16384 \
  --train.batch_size 64 --train.micro_batch_size 1 --train.max_epochs 2 \
  --adam.lr 5e-6 --lr_warmup_ratio 0.03 \
  --ds.zero_stage 3 --ds.param_dtype bf16 --ds.packing_samples \
  --model.gradient_checkpointing_enable \
  --ckpt.output_dir "$SAVE" --ckpt.path "$SAVE/ds" --ckpt.save_steps -1 --ckpt.save_hf \
  --logger.logging_steps 1 --train.seed 42 \
  "$@"
