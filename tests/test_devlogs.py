"""Every dev-logs case keeps its labelled category as the primary finding.

fixtures/devlogs/NNN-slug/ holds 70 real logs from public GRPO issue threads (log.txt, command.txt when the
user posted one, label.json with ``category`` and optional ``also_accept``; provenance in the README there).
Each case folder is analyzed as a run directory, as `grpo-doctor analyze fixtures/devlogs/NNN-slug` does, and
``findings[0].category`` must be the label or one of ``also_accept``.

Cases that miss today are listed in KNOWN_MISSES (case -> why, one line; the full study is
bench/ACCURACY-NOTES.md) and marked xfail(strict=True): a change that fixes one fails this test until its
entry is removed, so the list always says exactly what is still missed. bench/accuracy.py prints the same
figures with the evidence-line criterion.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from doctor.analyze import analyze

ROOT = Path(__file__).resolve().parent.parent
DEVLOGS = ROOT / "fixtures" / "devlogs"

KNOWN_MISSES: dict[str, str] = {
    "039-trl-grpo-qwen3-vl-notebook-string-indices-typeerror":
        "Jupyter header names TypeError, its message and frames are cut: nothing left to classify (GD999 warning)",
}


# fixtures/devlogs2: the second development set (45 real logs of 2026-11-28, README there), most of them from
# frameworks beyond ms-swift and trl; the cases it still misses, each with why
DEVLOGS2 = ROOT / "fixtures" / "devlogs2"
KNOWN_MISSES_2: dict[str, str] = {
    "135": "the loss repeating exactly each epoch (no update) is read as a log that stops mid-training",
}


# fixtures/devlogs3: the third development set (36 real logs of 2026-11-28, README there), harvested to find what
# the tool missed on logs it had not seen; the cases it still misses, each with why
DEVLOGS3 = ROOT / "fixtures" / "devlogs3"
KNOWN_MISSES_3: dict[str, str] = {
    "213": "a frameless one-line TypeError ('string indices must be integers'): reward or dataset code, no frame to tell",
    "235": "a traceback cut inside vLLM's engine construction: the KV-cache message is only in the thread's title",
}


# fixtures/devlogs5: the fifth development set (30 real logs of 2026-11-29, README there), harvested at the shapes the
# tool read worst; the cases it still misses, each with why
DEVLOGS5 = ROOT / "fixtures" / "devlogs5"
KNOWN_MISSES_5: dict[str, str] = {
    "505": "a traceback cut in ReaLHF's weight loading: the stage is named, the corrupt file only in the thread's title",
    "507": "flat rewards in every row come first; the torch.compile guard error the thread is about follows (GD326)",
    "508": "a notebook traceback cut in GradScaler's unscale: the fp16 argument problem is only in the title",
    "515": "a headless rich box cut before its exception: the target-modules error is only in the title",
    "529": "Ray re-raised an AssertionError whose DeepSpeed batch message is only in the thread's title",
}


# fixtures/devlogs6: the sixth development set (30 real logs of 2026-11-29, README there), harvested across the training
# stack as people post failures; the cases it still misses, each with why
DEVLOGS6 = ROOT / "fixtures" / "devlogs6"
KNOWN_MISSES_6: dict[str, str] = {
    "610": "two ranks' KeyError printed into each other with no frames: the sample code that read the column is unseen",
}


# fixtures/devlogs7: the seventh development set (30 real logs of 2026-11-29, README there), harvested where a blind
# set showed the tool weakest (TRL/transformers/unsloth, ms-swift checkpoints, dependencies, metric shapes)
DEVLOGS7 = ROOT / "fixtures" / "devlogs7"
KNOWN_MISSES_7: dict[str, str] = {
    "709": "Triton's assertion inside trl's vLLM engine, one line: read as a native crash; nothing in it names vLLM",
    "714": "a stall at a checkpoint save, ended by Ctrl-C and DeepSpeed's launcher: read as a cut KeyboardInterrupt",
    "715": "one line of ms-swift's end without a checkpoint: too little data and a resume at the last step both fit",
}


# fixtures/devlogs8: the eighth development set (30 real logs of 2026-11-29, README there): vLLM, DeepSpeed and
# torch.distributed, LLaMA-Factory, verl / OpenRLHF
DEVLOGS8 = ROOT / "fixtures" / "devlogs8"
KNOWN_MISSES_8: dict[str, str] = {
    "821": "LLaMA-Factory's 'Dropped invalid example' warning glued after a bar; the user's own print ends the log",
}


# fixtures/devlogs9: the ninth development set (30 real logs of 2026-11-29, README there): TRL / transformers / accelerate
# trainers, vLLM serving, ms-swift and others
DEVLOGS9 = ROOT / "fixtures" / "devlogs9"
KNOWN_MISSES_9: dict[str, str] = {}


# fixtures/devlogs10: the tenth development set (30 real logs of 2026-11-29, README there): no traceback (kills, hangs,
# error lines only) and metric-only failures, damaged the way people paste
DEVLOGS10 = ROOT / "fixtures" / "devlogs10"
KNOWN_MISSES_10: dict[str, str] = {}


# fixtures/devlogs11: the eleventh development set (30 real logs of 2026-11-29, README there): TRL / transformers errors,
# other frameworks' argument and config errors, dependency builds, rollout and weight-sync failures
DEVLOGS11 = ROOT / "fixtures" / "devlogs11"
KNOWN_MISSES_11: dict[str, str] = {
    "1312": "LLaMA-Factory's reward_model_type lora on a full reward model: GD810 reads an adapter/full mix-up (label: the argument)",
}


# fixtures/devlogs12: the twelfth development set (30 real logs of 2026-11-29, README there): dataset and template errors,
# metric-only failures, degenerate outputs, checkpoint problems, DeepSpeed config errors
DEVLOGS12 = ROOT / "fixtures" / "devlogs12"
KNOWN_MISSES_12: dict[str, str] = {
    "1408": "torch.cat of an empty list inside get_rope_index, the raising source line printed without its frame",
}


# fixtures/devlogs13: the thirteenth development set (25 real logs of 2026-11-29, README there): the natural spread of
# failures, with the blind set's family mix
DEVLOGS13 = ROOT / "fixtures" / "devlogs13"
KNOWN_MISSES_13: dict[str, str] = {
    "1510": "a KeyError for an adapter name inside a peft source checkout of a dev release: a version clash unread",
}


# fixtures/devlogs14: the fourteenth development set (30 real logs of 2026-11-29, README there): the natural spread of
# failures, with the blind set's family mix
DEVLOGS14 = ROOT / "fixtures" / "devlogs14"
KNOWN_MISSES_14: dict[str, str] = {
}


# fixtures/devlogs15: the fifteenth development set (30 real logs of 2026-11-29, README there): the natural spread, leaning
# to the categories the tool read worst (dataset and template, argument, checkpoint, DeepSpeed configuration)
DEVLOGS15 = ROOT / "fixtures" / "devlogs15"
KNOWN_MISSES_15: dict[str, str] = {
}


# fixtures/devlogs16: the sixteenth development set (30 real logs of 2026-11-29, README there): the natural spread, RL runs
# and recent threads first; many pastes cut before the exception with the issue title as line 1
DEVLOGS16 = ROOT / "fixtures" / "devlogs16"
KNOWN_MISSES_16: dict[str, str] = {
    "1915": "ms-swift's rollout-server connection failing inside argument setup: said as possible beside the flags",
}


# fixtures/devlogs17: the seventeenth development set (30 real logs of 2026-11-29, README there): titles and prose above
# cut stacks, frameless messages, vLLM serving runs beside RL runs
DEVLOGS17 = ROOT / "fixtures" / "devlogs17"
KNOWN_MISSES_17: dict[str, str] = {}


# fixtures/devlogs18: the eighteenth development set (30 real logs of 2026-11-29, README there): version stories in
# titles, launcher summaries cut before their cause, reward-grader noise
DEVLOGS18 = ROOT / "fixtures" / "devlogs18"
KNOWN_MISSES_18: dict[str, str] = {
}


# fixtures/devlogs19: the nineteenth development set (30 real logs of 2026-11-30, README there): prose-only pastes,
# titles that hold the exception, flattened tracebacks
DEVLOGS19 = ROOT / "fixtures" / "devlogs19"
KNOWN_MISSES_19: dict[str, str] = {
    "2413": "prose announcing an error shown as a screenshot: read as an unread failure (other), the label reads the reward-model path",
}


# fixtures/devlogs20: the twentieth development set (30 real logs of 2026-11-30, README there): known messages
# without their exception type, symptoms in mixed-language prose, DeepSpeed-Chat rows
DEVLOGS20 = ROOT / "fixtures" / "devlogs20"
KNOWN_MISSES_20: dict[str, str] = {
    "2528": "a PPO hang in make_experience under ZeRO-3 told in words with no step logged: read as a hang at start",
    "2526": "a raise line in a title above a cut traceback (DeepSpeed's param registry): cut stack wins",
}


# fixtures/devlogs21: the twenty-first development set (30 real logs of 2026-11-30, README there): many pastes stop
# before their exception; engine-core wordings without a stack; libraries matched by path words
DEVLOGS21 = ROOT / "fixtures" / "devlogs21"
KNOWN_MISSES_21: dict[str, str] = {
    "2618": "metric rows under a title naming an error not in the excerpt: silent",
}


# fixtures/devlogs22: the twenty-second development set (30 real logs of 2026-11-30, README there): attribute errors
# named in titles, PPO reward-model misuse, cut pastes under titles that say they errored
DEVLOGS22 = ROOT / "fixtures" / "devlogs22"
DEVLOGS23 = ROOT / "fixtures" / "devlogs23"
DEVLOGS24 = ROOT / "fixtures" / "devlogs24"
DEVLOGS25 = ROOT / "fixtures" / "devlogs25"
DEVLOGS26 = ROOT / "fixtures" / "devlogs26"
DEVLOGS27 = ROOT / "fixtures" / "devlogs27"
DEVLOGS28 = ROOT / "fixtures" / "devlogs28"
# devlogs29 leans on the classes a blind set found empty (hang at start, vLLM KV cache, multimodal, imports);
# devlogs30 on complete exceptions from any library (README in each)
DEVLOGS29 = ROOT / "fixtures" / "devlogs29"
DEVLOGS30 = ROOT / "fixtures" / "devlogs30"
# devlogs31: the natural spread of failures with complete exceptions; devlogs32: RL runs whose failure shows in
# metrics or outputs (README in each)
DEVLOGS31 = ROOT / "fixtures" / "devlogs31"
DEVLOGS32 = ROOT / "fixtures" / "devlogs32"
# devlogs33: the categories the last blind set missed most: checkpoints that do not load, imports, hangs at start,
# argument errors (README there)
DEVLOGS33 = ROOT / "fixtures" / "devlogs33"
# devlogs34: argument errors, vLLM engine failures, checkpoints that do not load, ms-swift and trl runs (README there)
DEVLOGS34 = ROOT / "fixtures" / "devlogs34"
# devlogs35: vLLM engines and servers, trl/transformers/Unsloth runs, slow or idle GPUs, checkpoints that do not load,
# argument errors, with the decisive line away from the bottom (README there)
DEVLOGS35 = ROOT / "fixtures" / "devlogs35"
# devlogs36: argument and DeepSpeed configuration errors, trl/transformers runs, verl/OpenRLHF and other RL frameworks,
# hangs at start-up (README there)
DEVLOGS36 = ROOT / "fixtures" / "devlogs36"
DEVLOGS37 = ROOT / "fixtures" / "devlogs37"
DEVLOGS38 = ROOT / "fixtures" / "devlogs38"
# devlogs39: pastes with little program output (titles, prose, configs, metric complaints), logs that end without an
# exception, trl/transformers/Unsloth/DeepSpeed runs (README there)
DEVLOGS39 = ROOT / "fixtures" / "devlogs39"
# devlogs40: exceptions raised by library source (transformers, trl, peft, accelerate, DeepSpeed, vLLM...), DeepSpeed
# and multi-node failures, ms-swift runs (README there)
DEVLOGS40 = ROOT / "fixtures" / "devlogs40"
# devlogs41: trl/transformers/Unsloth RL and preference runs, verl/NeMo-RL/EasyR1/open-r1/OpenRLHF (README there)
DEVLOGS41 = ROOT / "fixtures" / "devlogs41"
# devlogs42: LLaMA-Factory and ms-swift runs, DeepSpeed/NCCL/multi-node failures, vLLM serving (README there)
DEVLOGS42 = ROOT / "fixtures" / "devlogs42"
# devlogs44: 2025-2026 threads on recent releases (trl 0.2x, transformers 5, vLLM V1, ms-swift 4, verl, Unsloth)
DEVLOGS44 = ROOT / "fixtures" / "devlogs44"
# devlogs43: 2025-2026 threads on recent releases, issue numbers ending in 0-4 (README there)
DEVLOGS43 = ROOT / "fixtures" / "devlogs43"
# devlogs45: LLaMA-Factory runs, dataset/template and multimodal-image failures in any framework (README there)
DEVLOGS45 = ROOT / "fixtures" / "devlogs45"
# devlogs46: ms-swift runs of every subcommand, argument errors in any framework (README there)
DEVLOGS46 = ROOT / "fixtures" / "devlogs46"
# devlogs47 and 48: the natural spread over TRL, RL frameworks (verl, OpenRLHF, NeMo-RL...), LLaMA-Factory, ms-swift
DEVLOGS47 = ROOT / "fixtures" / "devlogs47"
DEVLOGS48 = ROOT / "fixtures" / "devlogs48"
# devlogs49 and 50: the blind sets' family mix, RL runs first (READMEs there; measured with and without the word reading)
DEVLOGS49 = ROOT / "fixtures" / "devlogs49"
DEVLOGS50 = ROOT / "fixtures" / "devlogs50"
# devlogs51 and 52: the same mix, harvested after the word reading (READMEs there give both figures)
DEVLOGS51 = ROOT / "fixtures" / "devlogs51"
DEVLOGS52 = ROOT / "fixtures" / "devlogs52"
DEVLOGS53 = ROOT / "fixtures" / "devlogs53"
DEVLOGS54 = ROOT / "fixtures" / "devlogs54"
DEVLOGS55 = ROOT / "fixtures" / "devlogs55"
DEVLOGS56 = ROOT / "fixtures" / "devlogs56"
DEVLOGS57 = ROOT / "fixtures" / "devlogs57"
DEVLOGS58 = ROOT / "fixtures" / "devlogs58"
DEVLOGS59 = ROOT / "fixtures" / "devlogs59"
DEVLOGS60 = ROOT / "fixtures" / "devlogs60"
DEVLOGS61 = ROOT / "fixtures" / "devlogs61"
DEVLOGS62 = ROOT / "fixtures" / "devlogs62"
DEVLOGS63 = ROOT / "fixtures" / "devlogs63"
DEVLOGS64 = ROOT / "fixtures" / "devlogs64"
DEVLOGS65 = ROOT / "fixtures" / "devlogs65"
DEVLOGS66 = ROOT / "fixtures" / "devlogs66"
DEVLOGS67 = ROOT / "fixtures" / "devlogs67"
KNOWN_MISSES_22: dict[str, str] = {
    "2702": "trl's PPO reward model without base_model_prefix, title only: GD999",
    "2703": "'reward_model has no attribute modules' in words without a type: silent",
    "2704": "unsloth full_finetuning with fast_inference named as the cause in a comment: cut-stage reading",
    "2728": "verl's 'hf rollout with mode sync not found' in a title: read as unread failure words",
}

KNOWN_MISSES_23: dict[str, str] = {
    "2908": "prose about a reward function returning the wrong number of rewards: GD328's unread words",
}
KNOWN_MISSES_24: dict[str, str] = {
    "3003": "an 'OOM' title beside a frameless AttributeError quoted in prose: the exception wins (GD999)",
}
KNOWN_MISSES_25: dict[str, str] = {
    "3120": "a title about vLLM's /sleep and /wake_up endpoints over a frameless error: GD999",
}
KNOWN_MISSES_26: dict[str, str] = {
    "3213": "a reward model of another base giving 'size mismatch' named in words: GD328",
    "3215": "INFO and NCCL INFO lines ending an excerpt after 'Start connecting to vLLM server': GD320",
    "3223": "a missing DeepSpeed ZeRO optimizer attribute (ipg_index) under the user's loss.backward(): GD999",
}

KNOWN_MISSES_27: dict[str, str] = {
    "3310": "command.txt flags written with a YAML colon ('--pref_loss: orpo'): LLaMA-Factory's unused-args error unread",
}
KNOWN_MISSES_28: dict[str, str] = {
    "3402": "a '.dev0' release named in a 'fails' title over an env report: GD328",
    "3407": "'Can't pickle local object patch_vllm_compute_dtype.<locals>.BitsAndBytesConfig' beside a vLLM version: GD999",
    "3420": "vLLM's loader refusing a weight_name keyword, in a title beside a topology table: GD328",
}

KNOWN_MISSES_29: dict[str, str] = {
    "3456": "host RAM exhausted by eight rollout processes, told in prose with a ps table: read as GPU OOM",
}
KNOWN_MISSES_30: dict[str, str] = {
    "3462": "a TypeError from Trainer.__init__ cut mid-name in a KTO example: GD999",
    "3471": "UnicodeDecodeError reading a dataset file on Windows: GD999",
    "3490": "'No such file: adapter_model.bin' in a title (a safetensors-saving peft): GD326",
}

KNOWN_MISSES_31: dict[str, str] = {
    "3492": "DPOConfig(padding_value=tokenizer.eos_token), a string where an id belongs, behind a cut stack: GD999",
    "3499": "PEFT's KeyError on the framework's own adapter name ('reward'): GD999",
    "3507": "verl's model merger refusing a checkpoint of another layout, told in words: GD328",
    "3510": "a failure title beside a launch script (OpenRLHF colocate with vLLM TP 2): GD328, no reading",
    "3511": "ZeroDivisionError in a trainer's fit setup inside a RayTaskError: GD999",
}
KNOWN_MISSES_32: dict[str, str] = {
    "3525": "'is_async_output_supported is not implemented' in a title, vLLM pinned in comments: GD328",
    "3527": "a tokenizer passed as DPO's processor for Qwen2.5-VL, cut in a notebook: GD999",
    "3540": "a verl multimodal rollout stack cut with the placeholder mismatch above it: GD999",
    "3536": "PPO rows with loss rising and reward flat at 0.13 over 1287 steps (llmtuner jsonl; right only with the word "
            "reading): GD330",
}
KNOWN_MISSES_33: dict[str, str] = {
}
KNOWN_MISSES_35: dict[str, str] = {
}
KNOWN_MISSES_46: dict[str, str] = {
    "4901": "ms-swift's remaining_argv refusal (an unknown flag) named in a title only: GD328",
    "4902": "'ValueError remaining_argv' in a title: the ValueError is read, its category only by the words' reading",
    "4904": "a flag one subcommand does not honour, said in prose: GD328",
    "4913": "a maintainer's version pin as the only answer, no error line: GD328",
    "4922": "argparse's invalid-value refusal in the title's inline code: GD328",
    "4925": "transformers' evaluation_strategy keyword refused, in a notebook header under Japanese prose: GD328",
}
KNOWN_MISSES_45: dict[str, str] = {
    "4805": "a NameError at import of a locally edited LLaMA-Factory checkout (resgister_template): GD999",
    "4808": "an export that wrote the unchanged base model, read as a size complaint: GD327 checkpoint-bloat",
    "4811": "a KTO preprocessing bug described in prose: GD328",
    "4814": "a cut dataset.map stack of a multimodal run (label other): GD999 dataset-or-template-error",
    "4816": "'Processor was not found' in a title without its type over a cut dataset.map stack: GD999",
    "4824": "trl DPO's vision-model mapping without gemma3, in prose: GD328",
    "4826": "the maintainer's comment that the <image> count must equal the images: GD328",
    "4829": "a trl 0.15 regression bisected to a commit, in prose: GD328",
    "4830": "KeyError of an int from a batched formatting_func: GD999",
}
KNOWN_MISSES_43: dict[str, str] = {
    "4604": "trl SFTTrainer asking for a formatting function with completion_only_loss: the cut stack's ValueError: GD999",
    "4605": "trl's 'Unknown loss type: dapo' under the Liger kernel (the fused kernel lacks the option): GD999",
    "4609": "a maintainer reply of version pins for Unsloth's vision example: GD328",
    "4615": "a maintainer reply naming vllm 0.8.5.post1 and trl 0.18 for ms-swift's multimodal GRPO: GD328",
    "4625": "a module path said to be wrong in a title, screenshots only: GD330",
}
KNOWN_MISSES_44: dict[str, str] = {
    "4705": "vLLM 0.8.3 Ray workers dying; a side remark about OOM in an older release read as the failure: GD327 cuda-oom",
    "4723": "unsloth 2025.8.9 beside trl 0.12.0 in an environment list (a release window not read): GD328",
    "4730": "a LLaMA-Factory SFT stack cut in the DDP forward, the error not in the excerpt: GD204 cuda-oom",
}
KNOWN_MISSES_42: dict[str, str] = {
    "4511": "lmdeploy's registry KeyError on an architecture name (ms-swift 2.x's default backend): GD999",
    "4515": "the maintainer's reply says vLLM does not support the model: GD328",
    "4526": "the maintainer's reply names the fix (--gdn-prefill-backend triton): GD328",
}
KNOWN_MISSES_41: dict[str, str] = {
    "4408": "a notebook's import of a class an older trl had, the maintainer naming the release: GD328",
    "4417": "NeMo-RL: the maintainer names an unsupported argument (data.subset) in a comment: GD328",
}
KNOWN_MISSES_39: dict[str, str] = {
    "4225": "a native crash (SIGFPE) in an fp16 GEMM on H20 from an old cuBLAS: GD998 vllm-engine-error",
}
KNOWN_MISSES_40: dict[str, str] = {
    "4303": "Mistral-Nemo on a transformers release older than the model: GD999",
    "4305": "AttributeError 'Accelerator' has no 'deepspeed_config' (set only when DeepSpeed prepared the model): GD999",
    "4308": "AttributeError 'deepspeed_engine_wrapped', a reply pins accelerate 0.30.1: GD999",
    "4311": "the standard library's logging.config 'Unable to configure handler' at vLLM start-up: GD999",
    "4325": "a title quoting torch's 'Cannot copy out of meta tensor': GD328",
}
KNOWN_MISSES_38: dict[str, str] = {
    "4107": "PPOTrainer.generate with return_dict_in_generate: an interpreter TypeError after the user's extra kwargs: GD999",
    "4109": "DPO error in screenshots; the maintainer's reply names null values in the data: GD328",
}
KNOWN_MISSES_37: dict[str, str] = {
}
KNOWN_MISSES_47: dict[str, str] = {
    "5008": "RewardTrainer columns dropped by a map, in Chinese prose: GD328",
    "5009": "fp16 weights under DDP without a grad scaler, a question: GD327 reads an argument error",
    "5017": "DeepSpeedCPUAdam's CUDA version check read as a DeepSpeed config error: GD426",
    "5018": "axolotl loss 0 / ppl 1 with sample packing, in words: GD330",
    "5024": "ms-swift Megatron merge with load: null in args.json, in prose: GD328",
    "5025": "a dev regression blamed on a commit, ray-prefixed trace: GD328",
}
KNOWN_MISSES_48: dict[str, str] = {
    "5107": "llama.cpp rejecting an unsloth GGUF export, in words: GD328",
    "5109": "a Colab session dying for memory in save_pretrained_merged: GD329",
    "5111": "a DeepSpeed checkpoint loaded where the HF model of save_path belongs: GD999",
    "5118": "NeMo-RL stopping after 'Saving checkpoint for step 2': GD329",
    "5129": "ZeRO shards left in tmp-checkpoint folders read as bloat: GD808",
}
KNOWN_MISSES_49: dict[str, str] = {
    "5216": "datasets' 'Keys mismatch' on a download, under Chinese prose: GD999",
    "5219": "vllm-ascend's worker line 'Available memory: 0' beside a second model: GD328",
    "5220": "max_model_len not passed through LangChain, said by the maintainer: GD328",
    "5221": "fairseq's two-node NCCL all_gather, the trace cut: GD999",
    "5228": "KeyError 'param_groups' loading released weights as a resume, in prose: GD328",
}
KNOWN_MISSES_50: dict[str, str] = {
    "5310": "a PPO reward model without value_head.bin, in words: GD328",
    "5313": "a resume stack ending in the optimizer state load: GD990 argument",
    "5325": "Ray workers killed at shutdown after training ended, the prose naming a batch size: GD327 cuda-oom",
}
KNOWN_MISSES_51: dict[str, str] = {
    "5418": "a vLLM TP8 serve hang whose body names the NCCL timeout, read by the title's hang word: GD327 hang-at-start",
    "5401": "a name removed from a package, imported by another: GD999",
    "5405": "a GRPO LoRA resume whose reward restarts, labelled other; the maintainer's 'fixed, please update' reads as a package version's (GD328)",
    "5407": "swanlab's tracker under DeepSpeed, the trace cut: GD999",
    "5411": "an UnboundLocalError inside a library (a library bug): GD999",
    "5412": "'2k数据' (a dataset size) read as a 2 KB file: GD327 checkpoint-corrupt",
    "5413": "swift eval with vLLM 0.10 failing, in a title: GD328",
}
KNOWN_MISSES_52: dict[str, str] = {
    "5503": "an import failure said in a title over screenshots: GD330",
    "5511": "LLaMA-Factory's KeyError 'eval_dataset' under do_predict: GD999",
    "5515": "unsloth's vision get_peft_model asserting the type of target_modules: GD999",
    "5518": "FlashInfer's sampler needing sm75: GD999",
    "5520": "an illegal memory access in a vLLM server, only starlette frames and a title: GD998",
    "5526": "a trainer argument refused by a library's check: GD999",
}
KNOWN_MISSES_53: dict[str, str] = {
    "5605": "a paste from after the user's fix, the title's OSError the label: GD423 deepspeed-config",
    "5618": "a V1 engine allocating for CUDA graphs until OOM, in words (no vLLM line): GD327 cuda-oom",
    "5629": "a KeyError on a data field while xtuner maps its dataset: GD999",
}
KNOWN_MISSES_54: dict[str, str] = {
    "5702": "a checkpoint that does not load, said in words: GD330",
    "5707": "trl PPO's value model loaded with num_labels=2: GD999",
    "5708": "a LoRA of the 14B model merged onto the 7B, in words: silent",
    "5711": "Qwen2-VL on a transformers older than the model: GD999 dataset",
    "5716": "an import failure in words: GD328",
    "5721": "'connection refused' at start, beside warnings: GD329",
    "5724": "out of memory in words over a stack cut in ZeRO-3 optimizer setup: GD426",
    "5729": "axolotl's dataset-loading stage, the trace cut: GD999",
}
KNOWN_MISSES_55: dict[str, str] = {
    "5804": "a list of possible causes read as a version clash: GD327 import",
    "5809": "a maintainer's 'NCCL not installed properly' in Chinese: GD328",
    "5823": "fused Adam handed CPU tensors under an nvme offload with a ratio: GD999",
    "5830": "a maintainer's 'check the storage space' in Chinese: GD328",
}
KNOWN_MISSES_56: dict[str, str] = {
    "5903": "a DPO dataset whose rejected turn has the user role, in repro code: GD327 argument",
    "5904": "'passed value_model, the error is gone': GD328",
    "5907": "an NCCL weight transfer to the vLLM server hanging mid-run: GD327 hang-at-start",
    "5908": "'does not support ZeRO-3' in a title over a cut launcher summary: GD307",
    "5927": "a GRPO run collapsing around step 600, in screenshots: GD328",
}
KNOWN_MISSES_57: dict[str, str] = {
    "6008": "numpy's reshape of Qwen2-VL's temporal patches for an odd frame count, in a title: GD328",
    "6009": "a stack cut at `with training_args` (main_process_first's barrier) under an NCCL title: dataset stage",
    "6010": "a dataset_info.json columns mapping left partial, in prose: GD328",
    "6012": "a resized vocabulary's modules_to_save copies refused on export: GD814 checkpoint-corrupt",
}
KNOWN_MISSES_58: dict[str, str] = {
    "6126": "a maintainer's question about NCCL between two machines, in prose: GD328",
    "6127": "a title saying the run is stuck above a cut ray.get stack: GD999",
}
KNOWN_MISSES_59: dict[str, str] = {
    "6206": "a LLaVA ZeRO-2 run stuck on several GPUs, told in prose only: no finding",
    "6208": "LLaMA-Factory's dataset-format refusal quoted in prose: GD328",
}
KNOWN_MISSES_61: dict[str, str] = {
    "6413": "a merged model reloading differently, told in prose (right only with the word reading): GD999",
    "6414": "the maintainer's 'should be fixed in release 4.3' in the paste, not read: GD328",
    "6415": "the maintainer's 'pip install -U ms-swift / fixed in PR' in the paste, not read: GD328",
    "6422": "a title naming zero.Init under ZeRO stage 2 (a ZeRO-3-only API): GD328",
    "6423": "a ds_report dump beside a device-mismatch told in prose: GD329",
    "6429": "a VLM's image-token count refusal (transformers llava _merge_input_ids_with_image_features): GD999",
}
KNOWN_MISSES_62: dict[str, str] = {
    "6501": "unsloth's fast_inference refusing a vision model (unsloth/models/vision.py): GD999",
    "6502": "a SyntaxError in code unsloth generates for MoE experts: GD999",
    "6503": "a merged checkpoint told in prose (right only with the word reading): GD328",
    "6504": "LoRA checkpoints of an extended tokenizer that do not load, told in prose: GD328",
    "6505": "KeyError: 'qwen2' (a model_type the installed transformers lacks), traceback cut: GD999",
    "6507": "a merged Gemma-3 reloading with different outputs, told in prose: GD328",
    "6508": "the first of two errors in one sentence ('Processor was not found': transformers too old) not read: GD994",
    "6509": "a device-side assert whose answer is --resize_vocab (new tokens beyond the embedding): GD449",
    "6520": "'24G 4090' and max-model-len for a 128k model, told in a title: GD328",
    "6522": "SIGTERM lines without an exit code after training ends (label other): GD310",
    "6524": "a ZeRO checkpoint loaded with another world size (label checkpoint-corrupt): GD427",
    "6528": "a dataset error told in prose (right only with the word reading): GD328",
}
KNOWN_MISSES_63: dict[str, str] = {
    "6603": "a tokenizer's __call__ cut before 'Asking to pad' (empty special tokens of a conversion): GD999",
    "6604": "SFTTrainer never learning EOS (pad equals eos, masked), told in prose: GD328",
    "6611": "MiniCPM-o image bounds 59 vs 58 in mm_plugin (visual tokens cut by cutoff_len): GD999",
    "6612": "a LoRA adapter with renamed keys silently not applied, told in prose: GD328",
    "6615": "swift deploy --max_memory ignored by the vLLM backend, told in prose: GD328",
    "6617": "vLLM tensor_parallel_size=2 never finishing its load, told in prose: GD328",
}
KNOWN_MISSES_64: dict[str, str] = {
    "6701": "trl PPOTrainer's ref model None under DeepSpeed + PEFT (answer: install trl main), rich-box AttributeError: GD999",
    "6705": "ZeRO-2 flattening an empty parameter group (torch.cat of an empty list) with PEFT: GD999",
    "6708": "LLaMA-Factory's transformers cap against Qwen3's minimum, told in prose: GD328",
    "6709": "a multi-GPU error after an update whose answer is a transformers release (screenshot): GD328",
    "6714": "ms-swift GRPO server mode with no rollout server started, told in prose: GD328",
    "6716": "a DPO adapter merge whose traceback is cut (a new environment): GD999",
    "6725": "trl's vLLM cap against a model needing a newer vLLM, 'slow' in the prose: GD327",
    "6726": "a pydantic validation error over several glued lines naming a config field: GD999",
    "6727": "a format reward regex without re.DOTALL (reward always 0), code pasted: GD328",
    "6728": "a format reward 'always -1' told in prose: GD330",
    "6729": "Ray Serve starting vLLM's V0 engine where vLLM defaults to V1: GD999",
}
KNOWN_MISSES_65: dict[str, str] = {
    "6808": "LLaMA-Factory's vllm_maxlen above the KV cache's capacity, in a comment: GD328",
    "6813": "an ms-swift GRPO trainer timing out on the rollout's group port, title and screenshots: GD328",
}
KNOWN_MISSES_66: dict[str, str] = {
    "6903": "a DeepSpeed LoRA resume whose fix is in a comment (right only with the word reading): GD328",
    "6927": "axolotl's schema silently dropping a YAML key: GD328",
}
KNOWN_MISSES_67: dict[str, str] = {
    "7003": "an OpenRLHF actor forward stuck in make_experience, trace cut, the hang only in a Chinese title: GD999",
    "7007": "unsloth_zoo's LoRA manager override against vLLM 0.15's new argument (right only with the word reading): GD999",
    "7008": "EasyR1 validating a large test set before training, told by rollout start/finish lines: GD328",
    "7020": "trl's maybe_apply_chat_template failing in a GRPO fork, title and source (right only with the word reading): GD328",
    "7021": "a LoRA resume cut in Trainer.train(resume_from_checkpoint=...) in a rich box: GD999",
    "7023": "torch's 'No CUDA GPUs are available' inside a verl reward function that loads a model: GD999",
    "7030": "vLLM's V1 oracle refusing OpenRLHF's worker extension (fallback to V0 refused): GD328",
}
# fixtures/devlogs68 and devlogs69: the blind sets blind32 and blind33 (40 real logs each, README there), retired from
# blind measurement and kept as development data; the cases they still miss, each with why
DEVLOGS68 = ROOT / "fixtures" / "devlogs68"
KNOWN_MISSES_68: dict[str, str] = {
    "7107": "ms-swift's infer_rank assert cut before its AssertionError line (the condition printed, no exception): GD999",
    "7126": "unsloth_zoo's compiler reaching a transformers module path that release lacks, message cut mid-word: GD999",
    "7129": "an exactly-zero policy gradient argued from LoRA B matrices in prose (mlx-lm-lora): GD328",
    "7132": "ROLL's response length falling to 0 said in Chinese above its YAML: GD328",
    "7133": "verl's model_merger asserting DTensor on a checkpoint saved from one GPU: GD999",
    "7134": "tensorboard's add_hparams refusing a config value's type in EasyR1's logger: GD999",
}
DEVLOGS69 = ROOT / "fixtures" / "devlogs69"
KNOWN_MISSES_69: dict[str, str] = {
    "7213": "trl's negative-KL warning read as a metric failure; the actor generating nothing is in a Chinese sentence: GD629",
    "7222": "transformers' 'Unrecognized image processor' for a checkpoint from a newer build: GD999",
    "7232": "an ActorDiedError the title calls an NCCL timeout in compute_log_prob: read as the host's kill (GD311)",
    "7238": "OpenRLHF's --remote_rm_url given a local .py to the DeepSpeed trainer, asked in prose: GD328",
}
# fixtures/devlogs70: the blind set blind34 (40 real logs, README there), retired after its grading; still missed
DEVLOGS70 = ROOT / "fixtures" / "devlogs70"
KNOWN_MISSES_70: dict[str, str] = {
    "7323": "RLinf's metrics box pasted as mojibake (UTF-8 box lines read as cp1252), rewards=0.0 in it (right only with the word reading): GD330",
    "7331": "'log_prob is nan' only in a pdb line's print() call (right only with the word reading): GD328",
    "7327": "a pasted table of trainable-parameter counts (0 with is_trainable=False) in a custom print: GD330",
    "7340": "LLaMA-Factory PPO rows with a level negative reward and a question about the loss (right only with the word "
            "reading): GD330",
    "7337": "two pasted logs (single-GPU, then multi-GPU) compared in a Chinese sentence; the first bar read as the end: GD324",
}

DEVLOGS71 = ROOT / "fixtures" / "devlogs71"
KNOWN_MISSES_71: dict[str, str] = {
    "7408": "two ms-swift DPO rows at 0.0065-0.008 iter/s (5 h for 176 steps) and no words: no finding",
    "7411": "DeepSpeed-Chat RLHF ZeRO-3 critic save hang pasted as warnings only: GD329",
    "7425": "trlx reward_fn's KeyError on a prompt that no longer matches its dict key (truncation): GD999 other",
    "7415": "verl DAPO stuck after Ray's head node started, no words (right only with the word reading): GD330",
    "7428": "a base model's output repeating the prompt's role block (right only with the word reading): GD330",
    "7429": "ZeRO-3 NVMe-offload generate at 32 s a token with MA 0.0 GB (right only with the word reading): GD330",
    "7435": "a LoRA adapter holding the whole embed_tokens (modules_to_save) (right only with the word reading): GD330",
    "7436": "DeepSpeed inference offload with host RAM at 99.2% (right only with the word reading): GD330",
}
KNOWN_MISSES_60: dict[str, str] = {
    "6304": "a title saying a passed flag has no effect (FSDP SHARD_GRAD_OP), no error line: GD330",
    "6314": "ms-swift's load_file taking a small PIL image for a path, library source pasted: GD328",
}
KNOWN_MISSES_36: dict[str, str] = {
    "3929": "verl train_batch_size below the GPU count, the numbers only in the Hydra overrides line: GD312",
}
KNOWN_MISSES_34: dict[str, str] = {
    "3726": "prose naming vLLM 0.8.5's V1 engine and an outputs_queue error: GD328",
    "3728": "an HTML-formatted paste of ms-swift's patch_remove_log under vLLM 0.11: GD328",
}


def _cases(root: Path = DEVLOGS) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "label.json").is_file())


# the later sets: (folder, known misses by case number, number of cases)
LATER_SETS = ((DEVLOGS2, KNOWN_MISSES_2, 45), (DEVLOGS3, KNOWN_MISSES_3, 36), (DEVLOGS5, KNOWN_MISSES_5, 30),
              (DEVLOGS6, KNOWN_MISSES_6, 30), (DEVLOGS7, KNOWN_MISSES_7, 30), (DEVLOGS8, KNOWN_MISSES_8, 30),
              (DEVLOGS9, KNOWN_MISSES_9, 30), (DEVLOGS10, KNOWN_MISSES_10, 30), (DEVLOGS11, KNOWN_MISSES_11, 30),
              (DEVLOGS12, KNOWN_MISSES_12, 30), (DEVLOGS13, KNOWN_MISSES_13, 25), (DEVLOGS14, KNOWN_MISSES_14, 30),
              (DEVLOGS15, KNOWN_MISSES_15, 30), (DEVLOGS16, KNOWN_MISSES_16, 30), (DEVLOGS17, KNOWN_MISSES_17, 30),
              (DEVLOGS18, KNOWN_MISSES_18, 30), (DEVLOGS19, KNOWN_MISSES_19, 30),
              (DEVLOGS20, KNOWN_MISSES_20, 30), (DEVLOGS21, KNOWN_MISSES_21, 30),
              (DEVLOGS22, KNOWN_MISSES_22, 30), (DEVLOGS23, KNOWN_MISSES_23, 30), (DEVLOGS24, KNOWN_MISSES_24, 26),
              (DEVLOGS25, KNOWN_MISSES_25, 30), (DEVLOGS26, KNOWN_MISSES_26, 30), (DEVLOGS27, KNOWN_MISSES_27, 30),
              (DEVLOGS28, KNOWN_MISSES_28, 30), (DEVLOGS29, KNOWN_MISSES_29, 30), (DEVLOGS30, KNOWN_MISSES_30, 30),
              (DEVLOGS31, KNOWN_MISSES_31, 30), (DEVLOGS32, KNOWN_MISSES_32, 30), (DEVLOGS33, KNOWN_MISSES_33, 30),
              (DEVLOGS34, KNOWN_MISSES_34, 30), (DEVLOGS35, KNOWN_MISSES_35, 30),
              (DEVLOGS36, KNOWN_MISSES_36, 30), (DEVLOGS37, KNOWN_MISSES_37, 30),
              (DEVLOGS38, KNOWN_MISSES_38, 30), (DEVLOGS39, KNOWN_MISSES_39, 30),
              (DEVLOGS40, KNOWN_MISSES_40, 30), (DEVLOGS41, KNOWN_MISSES_41, 30),
              (DEVLOGS42, KNOWN_MISSES_42, 30), (DEVLOGS44, KNOWN_MISSES_44, 30),
              (DEVLOGS43, KNOWN_MISSES_43, 30), (DEVLOGS45, KNOWN_MISSES_45, 30),
              (DEVLOGS46, KNOWN_MISSES_46, 30), (DEVLOGS47, KNOWN_MISSES_47, 30), (DEVLOGS48, KNOWN_MISSES_48, 30),
              (DEVLOGS49, KNOWN_MISSES_49, 30), (DEVLOGS50, KNOWN_MISSES_50, 30),
              (DEVLOGS51, KNOWN_MISSES_51, 30), (DEVLOGS52, KNOWN_MISSES_52, 30),
              (DEVLOGS53, KNOWN_MISSES_53, 30), (DEVLOGS54, KNOWN_MISSES_54, 30),
              (DEVLOGS55, KNOWN_MISSES_55, 30), (DEVLOGS56, KNOWN_MISSES_56, 30),
              (DEVLOGS57, KNOWN_MISSES_57, 30), (DEVLOGS58, KNOWN_MISSES_58, 30),
              (DEVLOGS59, KNOWN_MISSES_59, 30), (DEVLOGS60, KNOWN_MISSES_60, 30),
              (DEVLOGS61, KNOWN_MISSES_61, 30), (DEVLOGS62, KNOWN_MISSES_62, 30),
              (DEVLOGS63, KNOWN_MISSES_63, 30), (DEVLOGS64, KNOWN_MISSES_64, 30), (DEVLOGS65, KNOWN_MISSES_65, 30),
              (DEVLOGS66, KNOWN_MISSES_66, 30), (DEVLOGS67, KNOWN_MISSES_67, 30),
              (DEVLOGS68, KNOWN_MISSES_68, 40), (DEVLOGS69, KNOWN_MISSES_69, 40),
              (DEVLOGS70, KNOWN_MISSES_70, 40), (DEVLOGS71, KNOWN_MISSES_71, 40))



def _params():
    for root, misses in ((DEVLOGS, KNOWN_MISSES), *((root, misses) for root, misses, _ in LATER_SETS)):
        for case in _cases(root):
            why = misses.get(case.name) or misses.get(case.name.split("-")[0])
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            yield pytest.param(case, id=f"{root.name}-{case.name.split('-')[0]}", marks=marks)


def test_corpus_is_complete():
    cases = _cases()
    assert len(cases) == 70, "fixtures/devlogs should hold the 70 dev-logs cases"
    names = {c.name for c in cases}
    stale = sorted(set(KNOWN_MISSES) - names)
    assert not stale, f"KNOWN_MISSES names cases that are not in fixtures/devlogs: {stale}"
    for root, misses, count in LATER_SETS:
        numbers = {c.name.split("-")[0] for c in _cases(root)}
        assert len(numbers) == count and not set(misses) - numbers, root.name


@pytest.mark.parametrize("case", list(_params()))
def test_devlog_primary_category(case: Path):
    label = json.loads((case / "label.json").read_text(encoding="utf-8"))
    accept = [label["category"], *(label.get("also_accept") or [])]
    findings = analyze([str(case)]).findings
    got = [(f.category, f.rule_id, f.title) for f in findings[:3]]
    assert findings and findings[0].category in accept, f"want {accept}, got {got or 'no finding'}"


def test_bench_key_lines_match_the_fixtures():
    """bench/data/devlogs-evidence.toml names the lines that show each failure; they must match these logs."""
    spec = importlib.util.spec_from_file_location("bench_accuracy", ROOT / "bench" / "accuracy.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    table = mod.load_key_lines(mod.DEFAULT_EVIDENCE)
    assert set(table) == {c.name for c in _cases()}
    for case in _cases():
        mod.check_key_lines(case, table[case.name])  # raises SystemExit with the case on a mismatch


def test_bench_takes_a_fork_named_for_itself_as_the_framework_a_label_names_by_its_base():
    spec = importlib.util.spec_from_file_location("bench_accuracy", ROOT / "bench" / "accuracy.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    assert mod.frameworks_of({"framework": "verl"}) == ["verl", "easyr1"]
    assert mod.frameworks_of({"framework": "easyr1"}) == ["easyr1"]   # not the other way round
    assert mod.frameworks_of({"framework": "trl", "project": "VLM-R1"}) == ["trl", "vlm-r1"]
    assert mod.frameworks_of({"framework": "torch.distributed"}) == ["torch.distributed", "torch"]
    assert mod.frameworks_of({"framework": "torch"}) == ["torch"]
