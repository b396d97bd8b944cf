"""The words a paste uses for a failure (doctor/checks/hang/prose.py reads them): which symptom each wording names,
what places a hang at start-up or mid-training, what denies or only warns of a symptom, and what to ask for and check
meanwhile for each symptom. Knowledge only: patterns and sentences, no reading of a run."""
from __future__ import annotations

import re

from ... import lazyre
from ..numerics._nan_fixes import NO_LABEL_CAUSES, NO_LABEL_CHECK
from ..numerics.no_grad_graph import CHECKPOINT_FIX
from ..rewards.format_pattern import meanwhile as format_meanwhile

# what the words of a client polling its rollout server say (a symptom with a "meanwhile" of its own: MEANWHILE_SAID)
SERVER_POLL = "the trainer keeps polling its vLLM server, which is not running or not reachable"
EMPTY_OUTPUT = "the model returns empty completions"
SAME_WEIGHTS = "the same model answers well one way and badly another (a merge, an engine, a folder)"
ADAPTER_ONLY = "the output folder holds only the LoRA adapter's files"
COMPLETION_SHAPE = "the reward function receives completions of another shape than it was written for"
EMPTY_LABELS = "the loss is exactly 0 while grad_norm is NaN (a mean over no supervised token)"
NO_STOP = "the fine-tuned model does not stop where its answer ends"
LOSS_ZERO = "the training loss falls to exactly 0"
SILENT_END = "the process ended without any message"
EVAL_BATCH_SAID = "the eval batch is not a multiple of num_generations"
BATCH_SAID = "a batch size is not divisible by the count the trainer splits it into"
NO_REWARD_FN = "the framework has no reward function under the name or data source the run uses"
NO_CHAT_TEMPLATE = "the tokenizer has no chat template"
CHECKPOINT_NO_GRAD = ("gradient checkpointing leaves no weight that requires grad (a frozen base's adapters get no "
                      "gradient)")
AUTO_UNFILLED = "DeepSpeed's config still holds \"auto\" placeholders where it computes with numbers"
FORMAT_ZERO = "the format reward is (or fell to) 0"
# a score or accuracy said to be 0: the reward of an RL run (verl logs its reward as critic/score/mean, EasyR1 its rule
# reward's accuracy term), read as such only where the paste names an RL method (prose._first_symptom)
SCORE_ZERO = "the reward (the score or accuracy the run reports) is 0"
# one character repeated for every completion ("suddenly all become !", "rollout的结果全是！"): GPT-2-style byte-level
# vocabularies (Qwen's among them) give id 0 to "!", the token sampled when the probabilities are NaN
BANG_OUTPUT = "every completion is the same character repeated (\"!!!!\")"

# (pattern, category, what the words say): the symptom names of the DESIGN categories as users write them
GPU_OOM = "the GPU runs out of memory"
# a line that says whose memory ran out is the GPU's: CUDA, a GPU or card, torch's own error, 显存; without one of these
# words the reading says only that the run ran out of memory
GPU_WORDS = lazyre.compile(r"(?i)(?<![a-z0-9])(?:GPUs?|CUDA|VRAM|cards?|torch|OutOfMemoryError|A100|H100|H800|A800|"
                           r"4090|3090)(?![a-z0-9])|显卡|显存|张卡|单卡|多卡|卡上")
BARE_OOM = "the run runs out of memory, without saying whether of the GPU or of the host"

SYMPTOMS: tuple[tuple[re.Pattern, str, str], ...] = (
    # DeepSpeed ZeRO-3's warning of CUDA allocator retries ("N pytorch allocator cache flushes since last step. this
    # happens when there is high memory pressure ...": deepspeed/runtime/zero/stage3.py, from the accelerator's
    # memory_stats()["num_alloc_retries"]): the GPU's memory, whatever "memory pressure" says elsewhere
    (lazyre.compile(r"(?i)\ballocator cache flushes\b"), "cuda-oom",
     "the GPU's memory is nearly full (DeepSpeed reports CUDA allocator cache flushes)"),
    # host memory named as such first: "killed due to memory pressure (OOM)" (Ray's raylet), "the node is running low
    # on memory", "out of RAM", 内存不足, 爆内存 ("the RAM blows up", said of caches and buffers in host memory) name the
    # host's RAM even beside the word OOM
    (lazyre.compile(r"(?i)\bmemory pressure\b|\brunning low on memory\b|\bhost (?:memory|RAM)\b|\bout of (?:host )?RAM\b|"
                    r"\bkilled\b.{0,40}\b(?:OOM|memory)\b|\b(?:CPU|host|system|RAM) (?:OOM|out of memory)\b|"
                    # Ray's memory monitor kills workers itself: "Ray OOM causes the process to be killed"
                    r"\bRay(?:let)?\b.{0,20}\b(?:OOM|out of memory)\b|\bOOM\b.{0,40}\bkill(?:ed|s)?\b|\bOOM[- ]?killer\b|"
                    r"\b(?:system |host |cpu )?RAM (?:fills? up|filled up|is full|runs? out)\b|"
                    # Colab's front end: "Your session crashed after using all available RAM"
                    r"\ball (?:the )?available (?:system )?RAM\b|"
                    r"内存不足|内存溢出|内存不够|内存爆|爆内存|内存\s*OOM|"
                    # "进程被系统kill了": killed by the system, the host's OOM killer
                    r"被(?:系统|os|操作系统|内核)\s*(?:kill|杀)"), "host-oom-killed",
     "the host runs out of memory (RAM)"),
    # a process said to have got SIGKILL: without a traceback most often the kernel's OOM killer (wrapper_notice.py's
    # SIGNAL_MEANS; torch's elastic agent logs "Signal 9 (SIGKILL) received by PID", torch/distributed/elastic/
    # multiprocessing/api.py)
    # (not one the author sent: "we send SIGKILL to stop it")
    # ("Sigkill, process exits with return code -9": the launcher's return code for SIGKILL is -9, subprocess's -signum)
    (lazyre.compile(r"(?i)(?<!send )(?<!sent )(?<!sending )(?<![A-Za-z_])SIGKILL(?![A-Za-z_])|\bkilled -9\b|"
                    r"\b(?:return|exit)(?:ed)? ?(?:code|status)\s*(?:=|:|of|is)?\s*-9\b|\bexits? with (?:code )?-9\b|"
                    r"\b(?:died|killed|terminated|exited) (?:with|by) signal:? ?9\b"),
     "host-oom-killed",
     "a process was killed with SIGKILL, which without a traceback is most often the host's out-of-memory killer"),
    # vLLM's own words for a KV cache that does not fit, retyped in a sentence (worker.py raise_if_cache_size_invalid,
    # v1/core/kv_cache_utils.py check_enough_kv_cache_memory)
    (lazyre.compile(r"(?i)\bno available memory for the cache blocks\b|\bnot enough (?:KV )?cache (?:memory|blocks)\b|"
                    # the same said the other way round: "vLLM KV cache is not enough for max_model_len"
                    r"\bkv[ _-]?cache\b[^.;]{0,20}\b(?:is |was )?(?:not enough|insufficient|too small)\b|"
                    r"(?i:kv[ _-]?cache)[^。，,]{0,6}(?:不够|不足|太小)|"
                    # vLLM named as the one out of memory ("vllm显存不足", "vLLM OOM when generating")
                    # (vLLM itself, not a run that uses it: "用vllm跑grpo的时候显存不足" is the GRPO run's memory)
                    r"(?<![A-Za-z0-9_/-])(?i:vllm)(?![A-Za-z0-9_/-])\s*(?:推理|引擎|服务|部署|加载|的|engine\s|server\s)?\s*"
                    r"(?:显存不足|显存不够|显存溢出|爆显存|OOM\b|out of memory\b)|"
                    r"\bKV cache (?:is )?(?:needed|required) .{0,40}larger than the available\b"),
     "vllm-oom-or-kv-cache", "vLLM finds no GPU memory left for its KV cache"),
    # ASCII word edges: "突然OOM" (a CJK character is a word character to `re`)
    (lazyre.compile(r"(?i)(?<![a-z0-9])(?:OOM|out of memory|CUDA memory|OutOfMemory(?:Error)?)(?![a-z0-9])|"
                    # "显存爆了", "显存爆炸" (fixtures/devlogs31/3515, IDEA-Research/Rex-Omni#110; xiuqhou/Salience-DETR#56)
                    r"显存不足|爆显存|显存溢出|显存不够|显存(?:就|会|又|直接|也)?(?:爆|炸)|显存(?:占用|使用)(?:过|太|很|特别|非常)高|"
                    # memory said to leak on the GPU ("GPU memory leak", "显存泄漏"): a growth that ends out of memory
                    r"\b(?:gpu|cuda|vram) memory leak|\bmemory leak\w* (?:on|in) (?:the )?gpus?\b|显存泄(?:漏|露)"),
     "cuda-oom",
     GPU_OOM),
    # DeepSpeed's launcher stopping its children ("Killing subprocess N") quoted in a sentence: a child died first
    # (not when the same words give the child's exit status as positive: "Killing subprocess exits with return code =
    # 1" is a Python exception on that rank; a signal shows as a negative code, -9 for SIGKILL)
    # not Ray's "killed by `ray.kill`" (Ray's gcs_actor_manager.cc, the death cause RAY_KILL: an actor its driver tore down,
    # after another failure most often)
    (lazyre.compile(r"(?i)\b(?:killed(?!\s+by\s+`?ray\.kill)|oom[- ]killer)\b|被杀|被kill|"
                    r"Killing subprocess(?!.{0,60}return code\s*=\s*[1-9])"),
     "host-oom-killed",
     "the process was killed"),
    # a process that ends and says nothing ("the process terminated automatically after loading the checkpoint shards,
    # without providing any additional information"): a SIGKILL, which the kernel's OOM killer sends, leaves no line
    # ("it always been shutdown for no reasons without any hints!")
    (lazyre.compile(r"(?i)\b(?:terminat|exit|died|dies|quit|vanish|disappear|shut ?down|shuts down|shutting down)\w*\b"
                    r"[^.;。]{0,80}?(?:\bwithout (?:\w+ )?(?:any )?(?:additional |further |more |other )?(?:information|info|"
                    r"error messages?|messages?|traceback|output|logs?|reasons?|hints?|clues?)\b|"
                    r"\bwith no (?:error|error messages?|traceback|output|logs?)\b|\bfor no (?:apparent )?"
                    r"reasons?\b)|\b(?:terminat|exit|di|quitt|stopp)\w* (?:silently|abruptly|without (?:a|any) "
                    r"(?:word|trace))\b|(?:进程|程序)[^。，,]{0,10}(?:自动|直接|突然)(?:退出|结束|终止)[^。]{0,20}(?:没有|无)(?:任何)?"
                    r"(?:报错|提示|信息)"), "host-oom-killed", SILENT_END),
    (lazyre.compile(r"(?i)\bnccl\b.{0,60}\btime(?:d)? ?out|\btimeout\b.{0,60}\bnccl\b|通信超时"), "nccl-timeout",
     "an NCCL collective timed out"),
    # an NCCL error named in words: "rollout报错： NCCL error", "NCCL communications fail when using torch==2.7.0"
    (lazyre.compile(r"(?i)(?<![a-z])nccl(?![a-z]).{0,40}(?:\berrors?\b|\bfail(?:s|ed|ing|ure)?\b|报错|错误)|"
                    r"(?:报错|错误)[:：]?\s*nccl(?![a-z])"), "nccl-timeout", "NCCL (the GPUs' communication) fails"),
    # a collective that never returns: "a self.group.barrier wait is triggered", "hangs at dist.barrier()"
    (lazyre.compile(r"(?i)\bbarrier\b.{0,30}\b(?:wait\w*|hangs?|hung|stuck|blocks?|blocked)\b|"
                    r"\b(?:wait\w*|hangs?|hung|stuck|blocked) (?:at|in|on) (?:the )?[\w.]*barrier\b"), "nccl-timeout",
     "a collective (a barrier) waits for a process that never joins"),
    # torch elastic's rendezvous failing, named in words or by its class alone ("RendezvousConnectionError when use
    # C10d on multi nodes"): the processes never met, the run did not start
    (lazyre.compile(r"\bRendezvous\w*Error\b|(?i:\brendezvous\b.{0,40}\b(?:fail\w*|time[sd]? ?out|timed out|errors?|"
                    r"closed)\b)"), "hang-at-start", "torch's rendezvous fails (the processes do not meet to start)"),
    # a client polling its rollout server, retyped or named: trl's VLLMClient.check_server logs "Server is not up yet.
    # Retrying in {s} seconds..." (trl 0.17-0.29 generation/vllm_client.py) until vllm_server_timeout; "infinite retry"
    (lazyre.compile(r"(?i)\bserver is not up yet\b|\b(?:infinite(?:ly)?|endless(?:ly)?|keeps?|forever)\s+retr(?:y|ies|ying)\b|"
                    r"无限重试|一直重试"), "hang-at-start",
     SERVER_POLL),
    # a reward function given completions of another shape than it was written for: trl hands completions in the
    # prompts' format (trl/trainer/grpo_trainer.py _generate_and_score_completions: conversational prompts give each
    # completion as [{"role": "assistant", "content": ...}]); "function" is often mistyped: "the reward fucntion are
    # supposed to recive a list of strs as completion. But now ... it is nested in a list" (huggingface/trl#4202)
    (lazyre.compile(r"(?i)\breward[_ ]?(?:fu\w{2,8}|fns?)\b.{0,120}?(?:\blist of (?:strs?|strings|dicts?|"
                    r"messages)\b|\bnested\b|\[\s*['\"]content|\bmessage dicts?\b|\bconversational\b|"
                    r"\bstring indices must be integers\b)"),
     "reward-function-error", COMPLETION_SHAPE),
    # a reward function said to fail: "my custom reward function raises an error", "reward function returns None"
    (lazyre.compile(r"(?i)\breward[_ ]?(?:fu\w{2,8}|fns?|funcs?)\b[^.;]{0,40}\b(?:raises?|raised|throws?|threw|"
                    r"returns? (?:none|nan|an? (?:error|exception))|errors? out|crash(?:es|ed)|fails?|failed)\b|"
                    r"奖励函数[^。]{0,20}(?:报错|出错|返回None)"),
     "reward-function-error", "the reward function fails"),
    # the trainers' batch checks retold in a sentence (trl grpo_trainer.py: "The global eval batch size (N x M) must be
    # evenly divisible by the number of generations per prompt (G)", the same for the train batch; verl's
    # "real_train_batch_size ... must be divisible by" and its mini-batch checks): the eval one first, its own category
    (lazyre.compile(r"(?i)\beval(?:uation)?[ _]?batch[ _]?size\b[^.;。\n]{0,80}?\b(?:(?:evenly )?divisible|a multiple of)\b"),
     "eval-batch-divisibility", EVAL_BATCH_SAID),
    (lazyre.compile(r"(?i)\bbatch[ _]?size\b[^.;。\n]{0,80}?\b(?:(?:evenly )?divisible by|a multiple of)\b[^.;。\n]{0,60}?"
                    r"\b(?:num_generations|(?:number of )?generations|GPUs?|processes|world[ _]size|mini[ _]?batch\w*|"
                    r"n_gpus\w*|rollout\.n)\b"),
     "batch-divisibility", BATCH_SAID),
    # a reward function the framework has none of for a data source (verl utils/reward_score/__init__.py
    # default_compute_score: raise NotImplementedError(f"Reward function is not implemented for {data_source=}")), retold
    (lazyre.compile(r"(?i)\breward[ _](?:function|fn|func)s?\b[^.;。\n]{0,40}?\b(?:is |are |was )?not (?:implemented for|"
                    r"registered|found)\b|\bno reward[ _](?:function|fn|func)s?\b[^.;。\n]{0,40}?\b(?:registered|"
                    r"implemented|found|defined)\b"),
     "reward-function-error", NO_REWARD_FN),
    # a loss of exactly 0 beside a NaN gradient norm ("loss为0， grad_norm为nan", "'loss': 0.0, 'grad_norm': nan"): a
    # mean over zero supervised tokens (huggingface/trl#6668, princeton-nlp/SimPO#35), before the NaN words
    (lazyre.compile(r"(?i)(?<![a-z])loss(?![a-z_])['\"]?[^。，,.;]{0,12}?(?:为|是|=|:|is|of|stays?(?: at)?|always)\s*['\"]?0(?:\.0+)?"
                    r"(?![.\d])[^。.;]{0,40}?grad_norm['\"]?[^。，,.;]{0,12}?(?:为|是|=|:|is)?\s*['\"]?nan\b|"
                    r"grad_norm['\"]?[^。，,.;]{0,12}?(?:为|是|=|:|is)?\s*['\"]?nan\b[^。.;]{0,40}?(?<![a-z])loss(?![a-z_])"
                    r"['\"]?[^。，,.;]{0,12}?(?:为|是|=|:|is)\s*['\"]?0(?:\.0+)?(?![.\d])"),
     "loss-nan-or-inf", EMPTY_LABELS),
    # ASCII word edges: "nll_loss一直为nan" (a CJK character is a word character to `re`, "_" joins words)
    # (DPO's rewards, margins and log-probs too: "reward nan"; 无穷 is infinity: "loss异常…0或则无穷大")
    (lazyre.compile(r"(?i)(?<![a-z0-9])(?:loss|grad_norm|grad(?:ient)? norms?|kl|logits?|rewards?|margins?|logps)(?![a-z0-9]).{0,30}"
                    r"(?:(?<![a-z0-9])(?:nan|inf|infinity)(?![a-z0-9])|无穷)|"
                    r"(?<![a-z0-9])nan(?![a-z0-9]).{0,30}(?<![a-z0-9])loss(?![a-z0-9])|"
                    # gradients said to explode ("gradient explosion", "exploding gradients", 梯度爆炸)
                    r"\bgradients? (?:explosion|explod\w*)|\bexploding gradients?\b|梯度爆炸|"
                    # Megatron's own check (core/distributed/param_and_grad_buffer.py): "found NaN in local grad norm
                    # for bucket #0 in backward pass"
                    r"(?<![a-z0-9])nan(?![a-z0-9]).{0,30}\bgrad(?:ient)?[_ ]norm\b|"
                    # the change itself, no metric named: "Randomly resulting to NaN", "Suddenly output NaN",
                    # "the logprob becomes NaN" (fixtures/devlogs50/5326, devlogs12/1418, devlogs47/5006)
                    r"\b(?:result(?:s|ed|ing)? (?:to|in)|outputs?|bec(?:ame|omes?|oming)|turn(?:s|ed)? (?:in)?to|"
                    r"go(?:es)? to|went to) NaNs?\b|"
                    # the same in Chinese, no metric named: "DPO出现nan", "训练一段时间后还是会出现NaN", "就全部变为nan了"
                    # (fixtures/devlogs55/5812, devlogs10/1115, devlogs42/4504)
                    r"(?:出现|变成|变为|成了|产生)\s*nan(?![a-z0-9])"),
     "loss-nan-or-inf", "a loss or metric became NaN"),
    # a title that states GD634's mechanism in words: "model will have no weight with `require_grads=True` if gradient
    # checkpointing is enabled after PeftModel is created"
    (lazyre.compile(r"(?i)^(?=.*gradient[_ ]checkpointing)(?=.*(?:require[sd]?_?grads?|requires? grad|no grad|"
                    r"grads? (?:is|are) None)).*"),
     "argument-error-other", CHECKPOINT_NO_GRAD),
    (lazyre.compile(r"(?i)\bgrad(?:ient)?[_ ]norm\b.{0,20}\b(?:is |stays? |always |remains? )?(?<!#)(?:0(?:\.0+)?(?!\.?\d)|zero)\b|梯度.{0,6}为?0|"
                    # "loss和grad_norm都为0": an English metric name, a Chinese predicate
                    r"(?<![a-z])grad_norm(?![a-z])[^。，,.;]{0,16}?(?:都|均|全|一直)?(?:为|是|等于)\s*0(?![.\d])"),
     "grad-norm-zero", "the gradient norm stays 0"),
    # the weights said not to move, or the gradients said to be zero: "the LoRA B matrices stay exactly 0.0"
    # (devlogs68/7129), "so no weights update" (devlogs70/7327), "the gradient is zero for all parameters", "parameters
    # are not updated", "权重没有更新"
    (lazyre.compile(r"(?i)\b(?:weights?|parameters?|params|lora(?: weights| matrices| [ab]| adapters?)?|adapters?)\b (?:are |is |were |was |"
                    r"do |does |did )?(?:never |not |no longer |(?:do|does|did|are|is|were|was)n't )(?:being )?(?:updat(?:ed|ing)|"
                    r"chang(?:ed|ing|e)|"
                    r"train(?:ed|ing))\b|\bno (?:weights?|parameters?) (?:update|change)s?\b|"
                    r"\bgradients? (?:is|are|stays?|remains?) (?:all |always |exactly )?(?:zero|0(?:\.0+)?)(?![.\d])|"
                    r"\bno gradients? (?:flows?|reach(?:es)?|(?:is|are) computed)\b|"
                    r"\bgradients? (?:never|do(?:es)?n't|do(?:es)? not) (?:reach|flow)|"
                    r"\b(?:weights?|parameters?|params) (?:stay|stays|remain|remains|stayed|remained) (?:the same|unchanged)\b|"
                    # "all grads are None" (.grad of a parameter no loss reached)
                    r"\b(?:all )?(?:the )?(?:grads?|gradients?|\.grad)s? (?:are|is|were|was) (?:all |always )?None\b|"
                    r"(?:权重|参数)(?:没有|没|未|不)(?:被)?(?:更新|变化|改变)|梯度(?:全|都|一直)?(?:为|是)\s*(?:0|零)"),
     "grad-norm-zero", "the weights are not updated (no gradient reaches them)"),
    # the format reward named as the one at 0 ("format_reward always zero", "the format reward is zero", "format
    # reward一直是0", "格式奖励为0"): a pattern that does not match (rewards/format_pattern.py), before the reward at large
    (lazyre.compile(r"(?i)(?:\b\w*format\w*|格式)[ _]?(?:rewards?|奖励)(?:[ _]?func\w*)?(?![a-z]).{0,30}?"
                    r"(?:\b(?:always|stays?(?: at)?|stuck at|remains?(?: at)?|is|are|equals?(?: to)?|equal to|became|"
                    r"becomes?|(?:dropped|drops|fell|falls|went|goes|declin(?:e|es|ed|ing)) to)\s+(?:0(?:\.0+)?(?!\.?\d)|zero)\b|"
                    r"(?:一直|始终|总是|都|均)*(?:是|为|等于|变成|降到|降为)\s*0(?![.\d]))"),
     "reward-zero-or-flat", FORMAT_ZERO),
    # a state or a change of state: "the reward stays 0", "the reward became 0", "奖励降到0"
    # (a reward function's own metric counts: "accuracy_reward is always 0")
    (lazyre.compile(r"(?i)(?<![a-z])rewards?(?!\w).{0,30}\b(?:always(?: be| gets?)?|stays?(?: at)?|stuck at|remains?(?: at)?|is|are|became|becomes?|"
                    r"(?:dropped|drops|fell|falls|went|goes|turned|turns|collapsed|collapses|crash(?:es|ed)?|declin(?:e|es|ed|ing)) to)\s+"
                    r"(?:still |always |again )?(?:0(?:\.0+)?(?!\.?\d)|zero)\b|"
                    r"reward_std.{0,16}\b0\b|frac_reward_zero_std.{0,16}\b1(?:\.0+)?\b|奖励.{0,8}(?:为|是|一直|变成|变为|降到|掉到|降为)\s*0|"
                    # "reward和loss都为0": an English metric name, a Chinese predicate
                    r"(?<![a-z])rewards?(?![a-z])[^。，,.;]{0,16}?(?:都|均|全|一直)?(?:为|是|等于|变成|变为|降到)\s*0(?![.\d])"),
     "reward-zero-or-flat", "the reward is (or fell to) 0"),
    # the maximum every time is as flat as 0: a group whose completions all score 1 has no advantage to learn from
    # ("accuracy reward和format reward一直都是1", "the reward is always 1.0"; fixtures/devlogs49/5215)
    (lazyre.compile(r"(?i)(?<![a-z])rewards?(?![a-z])[^。，,.;]{0,16}?(?:一直|始终|总是|都|均)+(?:是|为|等于)\s*1(?:\.0+)?(?![.\d])|"
                    r"\brewards?\b.{0,30}\b(?:always|constantly|stays?|stuck at|remains?)\s+(?:at\s+)?(?:1(?:\.0+)?|one)\b"
                    r"(?![.\d])|"
                    # "overall reward score reach maximum 1 (no further grpo gain) after 60 steps"
                    r"\brewards?\b.{0,30}\b(?:reach(?:es|ed)?|hits?|saturat\w*(?: at)?)\s+(?:the\s+|its\s+)?(?:max(?:imum)?\s+)?"
                    r"(?:of\s+)?1(?:\.0+)?(?![.\d%])"),
     "reward-zero-or-flat", "the reward is always 1 (the same for every completion)"),
    # a score or accuracy at 0 ("rollout score is zero", "accuracy score为0"): an RL run's reward by another name
    (lazyre.compile(r"(?i)\b(?:scores?|accuracy|acc)\b.{0,30}\b(?:always|stays?(?: at)?|stuck at|remains?(?: at)?|is|are|"
                    r"became|becomes?|(?:dropped|drops|fell|falls|went|goes) to)\s+(?:0(?:\.0+)?(?!\.?\d)|zero)\b|"
                    r"(?<![a-z])(?:scores?|accuracy|acc)(?![a-z])[^。，,.;]{0,16}?(?:都|均|全|一直|始终)?(?:为|是|等于|变成|变为|降到)"
                    r"\s*0(?![.\d])|(?:准确率|得分|分数)[^。，,.;]{0,8}?(?:都|均|全|一直|始终)?(?:为|是|等于)\s*0(?![.\d])"),
     "reward-zero-or-flat", SCORE_ZERO),
    # the trends of an RL run said in words (the metric rules read them from rows: GD625's KL spike is loss-nan-or-inf,
    # GD626's entropy and GD640's degenerate completions output-degenerate): "objective/kl increases a lot", "the
    # Unexpected Increase in Entropy", "spikes in response length", "average response length keeps decreasing"
    (lazyre.compile(r"(?i)\b(?:objective[/_])?kl(?:[_ ]divergence)?\b`?.{0,24}\b(?:increas\w*|ris(?:es|ing)|rose|grows?|"
                    r"explod\w*|blows? up|spik\w*|jumps?)\b|\b(?:increas\w*|spikes?|explosion|jump) (?:in|of) (?:the )?kl\b|"
                    r"kl.{0,10}(?:暴涨|飙升|爆炸|一直(?:上升|增大|增加))"),
     "loss-nan-or-inf", "the KL to the reference runs away (a diverging policy)"),
    (lazyre.compile(r"(?i)\bentropy\b.{0,24}\b(?:increas\w*|ris(?:es|ing)|rose|explod\w*|spik\w*|collaps\w*)\b|"
                    r"\b(?:increase|spikes?|explosion|collapse|rise) (?:in|of) (?:the )?(?:policy'?s? )?entropy\b|"
                    r"\b(?:response|completion|generation|output)[_ ]length\b.{0,30}\b(?:spik\w*|explod\w*|drops?|dropped|"
                    r"fell|falls|shrinks?|shrank|(?:keeps?|is|are) "
                    r"(?:increasing|decreasing|growing|shrinking|dropping)|collaps\w*)\b|\bspikes? in (?:the )?"
                    r"(?:response|completion|output) length\b|熵.{0,6}(?:暴涨|飙升|突然(?:上升|增大))|"
                    r"(?:回复|输出|生成)长度.{0,8}(?:暴涨|飙升|一直(?:增加|变长|变短|下降))"),
     "output-degenerate", "the policy's entropy or its completions' length runs away"),
    # the reward moving without improving: "reward fluctuates and the model is not learning", "reward does not go up"
    # ("Why don't rewards increase instead of staying at a certain value", "rewards plateau", "reward只能到0.6")
    (lazyre.compile(r"(?i)(?<![a-z])rewards?(?!\w).{0,30}\b(?:fluctuat\w*|oscillat\w*|plateau\w*|stagnat\w*|do(?:es)?(?:n't| not) (?:increase|improve|go up|"
                    r"rise|change)|(?:is )?not (?:increasing|improving|learning|going up|rising|changing|moving))\b|"
                    r"\b(?:do(?:n't| not)|does(?:n't| not)|never) (?:the )?rewards? (?:increase|improve|go up|rise)\b|"
                    r"\brewards?(?: curves?| plots?)?\b (?:is |are |stays? |remains? |looks? )(?:completely |totally |almost |nearly |"
                    r"basically )?flat\b|"
                    r"\brewards?\b.{0,30}\b(?:stays?|staying|stuck|remains?) (?:at )?(?:a |the )?(?:certain|constant|fixed|same) "
                    r"(?:value|level)\b|"
                    r"(?:奖励|reward).{0,16}?(?:不(?:再)?(?:涨|上涨|上升|增长|提升)|不变|没有(?:上升|提升|变化)|上不去|涨不上去|停滞)|"
                    # one run's reward against another's: "open r1 reward可以到0.9，但easy r1 只能到0.6"
                    r"(?:奖励|reward)[^。]{0,30}只能(?:到|达到)\s*\d|"
                    # an RL run said not to improve or learn, in a line that names the reward or the RL method: "the
                    # reward function (accuracy reward) doesn't show any improvement after 20 steps" (dev32 3523), "Toy
                    # example for PPO doesn't learn as much as expected" (dev59 6227), "reinforce(gspo) training didn't
                    # yield any improments" (dev55 5501); not "do not learn to stop generations" (a behaviour)
                    r"^(?=.*\b(?:rewards?|grpo|ppo|gspo|dapo|rloo|reinforce|rlhf|rl)\b).*?(?:\b(?:does(?:n't| not)|"
                    r"did(?:n't| not)|is(?:n't| not)|are(?:n't| not)|never)\s+(?:show\s+|yield\s+|give\s+|bring\s+|make\s+)?"
                    r"(?:any\s+)?(?:learn(?:ing|s)?|improv\w*|impro\w*ments?)\b(?!\s+to\b)|\b(?:no|without any)\s+"
                    r"improvements?\b)"),
     "reward-zero-or-flat", "the reward does not improve"),
    # DeepSpeed's "auto" placeholders left in its config (only transformers' Trainer and accelerate fill them), said in
    # words: "'auto' values in a DS config are no longer interpolated", "the deepspeed assertions raise a str to int
    # comparison error" (accelerate 1.0 with ZeRO-3 outside the Trainer; deepspeed.initialize given an HF-style config)
    (lazyre.compile(r"(?i)[`'\"]?\bauto\b[`'\"]? values?\b.{0,60}\b(?:not|no longer|never) (?:be(?:ing)? )?(?:interpolated|"
                    r"filled|replaced|resolved|substituted)\b|\bstr(?:ing)? (?:to|and|vs\.?) (?:int|float) comparison\b"),
     "deepspeed-config-error", AUTO_UNFILLED),
    # vLLM's release named against the trainer's: "vllm 0.8.0 is not compatible with trl 0.16", "Which vllm version
    # should I use with ms-swift 3.3?", "After upgrading vLLM to 0.9 the GRPO training fails" (the trainers pin the vLLM
    # releases they support: trl's is_vllm_available, ms-swift's README table)
    (lazyre.compile(r"(?i)(?<![\w/-])vllm(?![\w/-])(?:[^.;?]|\.(?=\d)){0,40}\b(?:is |are )?(?:not compatible|incompatible)\b|"
                    r"\b(?:not compatible|incompatible)\b(?:[^.;?]|\.(?=\d)){0,30}(?<![\w/-])vllm(?![\w/-])|"
                    r"\bwhich (?:version of vllm|vllm(?: version)?)\b|\bvllm version\b[^.;?]{0,30}\b(?:should|to use|"
                    r"compatible|required|supported|match\w*)\b|"
                    r"\b(?:upgrad|downgrad|updat)\w* (?:the )?vllm\b(?:[^.;]|\.(?=\d)){0,40}\b(?:fails?|failed|errors?|broke|breaks|"
                    r"crash\w*)\b|vllm\s*(?:版本|的版本)(?:不兼容|不匹配|冲突|太(?:高|低))"),
     "vllm-version-incompatible", "the vLLM release is in question against the trainer's"),
    # two installed packages whose versions do not match: "version conflict", "Conflict between last version of
    # Transformers.Trainer and DPOTrainer", "是NCCL和cuda的版本不匹配导致的"
    (lazyre.compile(r"(?i)\b(?:conflict|incompatib\w*)\b.{0,60}\bbetween\b|\bversions? (?:conflict|clash|mismatch)\b|"
                    r"版本不匹配|版本不一致|版本对不上"),
     "import-or-dependency-error", "the versions of installed packages do not match each other"),
    # a release change named as the trigger: "new release 4.53.0 breaks ...", "(v0.14.0 works)", "downgrading to 4.52.4
    # fixes it", "after upgrading to 0.19.0": the failure came with a library version
    (lazyre.compile(r"(?i)\brelease v?\d+\.\d+(?:\.\d+)? breaks\b|\bv?\d+\.\d+\.\d+\)? works\b|"
                    r"\bdowngrad\w*\b.{0,60}\b(?:works?|worked|fix(?:es|ed)?|solved?|gone|prevents?)\b|"
                    # "I reverted back to version 2025.12.4, where everything is fine"
                    r"\brevert\w* (?:back )?to (?:version |v)?\d+\.\d+(?:\.\d+)?\b.{0,40}\b(?:fine|works?|worked|ok|normal|"
                    r"solved?|fix(?:es|ed)?)\b|"
                    # a release named with the verb before it: "training is broken with vllm==0.5.0", "Adam Offload
                    # fail with DeepSpeed v0.14.2", "it works well with DeepSpeed v0.14.0", "failed, but it works with
                    # `0.15.4`", "this error occurs when the PyTorch version is `2.8.0`"
                    r"\b(?:broken|fails?|failed|failing|breaks?|works?(?: well| fine)?)\s+(?:with|on|since|after|in)\s+"
                    r"`?(?:[A-Za-z][\w.-]*\s*(?:==\s*|\s+)?)?v?\d+\.\d+\.\d+\b|"
                    r"\b(?:error|failure|bug|crash)\b.{0,20}\b(?:occurs?|happens?|appears?)\b.{0,30}\bversion is\s+`?v?\d+\.\d+\.\d|"
                    r"\[Regression\]|"
                    r"\b(?:works?|worked) (?:again )?(?:after|when|if) (?:I )?downgrad|"
                    r"\bpin(?:ning)? (?:\w+[ =]{1,2})?v?\d+\.\d+\.\d+ (?:and|fixes|solves)\b|"
                    r"\bafter (?:upgrad|updat)\w* (?:\w+ )?(?:to )?v?\d+\.\d+|"
                    # "Training requires upgrading transformers from 4.49.0", "needs a newer vllm than 0.8.5"
                    r"\b(?:requires?|needs?|had to|have to)\s+(?:upgrad|updat|downgrad)\w*\s+`?[A-Za-z][\w.-]*`?\s+(?:from|to)\s+"
                    r"v?\d+\.\d+|\b(?:requires?|needs?)\s+(?:a\s+)?(?:newer|later|higher)\s+`?[A-Za-z][\w.-]*`?\s+than\s+v?\d+\.\d+|"
                    r"升级.{0,12}\d+\.\d+.{0,8}(?:后|之后)|降级.{0,20}(?:就好|解决|正常)|"
                    r"\breleased? (?:a )?new version\b.{0,60}\b(?:errors?|break\w*|broke|fail\w*)\b|"
                    r"\binstall\s+`?[\w.-]+==v?\d+\.\d+(?:\.\d+)?`?\s+instead\b|"
                    # an API said changed between releases: "`max_seq_length` was renamed to `max_length` in `SFTConfig`"
                    # (dev43 4607), "Both arguments were removed in `transformers` 5.15.0" (dev64 6702), "`Trainer.__init__()`
                    # no longer accepts the `tokenizer` argument" (dev35 3818), "PPOTrainer has been deprecated in favor of
                    # PPOv2Trainer" (dev25 3107); a name in code quotes, an argument or a class before the verb
                    r"(?:`[\w.()]+`|\b[a-z]+_[a-z_]+\b|\b[A-Z]\w*(?:Trainer|Config|Arguments)\b|\barguments?\b|\bparameters?\b)"
                    r"[^.;]{0,40}\b(?:was|were|has been|have been|got) (?:renamed|removed|moved|deprecated)\b|"
                    r"\bno longer (?:accepts?|supports?|takes?) (?:the )?(?:`[\w.]+`|[a-z]+_[a-z_]+|\w+ (?:argument|parameter|"
                    r"keyword))|"
                    # CPython's TypeError for a keyword the callee does not take, named in a sentence ("I get an
                    # unexpected keyword argument 'max_seq_length' error"): 37 of the 39 dev threads with the wording
                    # accept a package version's failure (GD457's reading when the exception line itself is there)
                    r"\bunexpected keyword argument\b|"
                    # the same said of the release: "trl 0.12 moved max_seq_length into SFTConfig"
                    r"\b(?:v?\d+\.\d+(?:\.\d+)?|releases?|versions?)\b[^.;]{0,20}\b(?:moved|renamed|removed)\b[^.;]{0,40}"
                    r"\b(?:into|to|from) (?:the )?`?[A-Z]\w*(?:Config|Arguments|Trainer)\b|"
                    # "failures in main", "the same code worked two days ago"
                    r"\b(?:fails?|failures?|broken|breaks?)\s+(?:in|on)\s+(?:main|master|nightly)\b|"
                    r"\b(?:worked|was working|ran fine)\b.{0,30}\b\w+ (?:days?|weeks?) ago\b|"
                    # "vllm version 0.8.5.post1 not supported", "vllm的版本不支持"
                    r"\bversion\b.{0,30}\bnot (?:yet )?supported\b|版本不支持|版本.{0,6}不兼容|不兼容.{0,6}版本|"
                    # "Unsloth is extremely sensitive to the versions of trl and vLLM"; "with 2025.1.8 all process is
                    # correct, but with 2025.2.4 the train process is weird": one release works, the next does not
                    r"\bsensitive to the versions? of\b|"
                    r"\bv?\d+\.\d+\.\d+\b[^.;]{0,40}\b(?:is |are |was |were )?(?:correct|fine|works?|worked|ok|normal)\b"
                    r"[^;]{0,80}\bv?\d+\.\d+\.\d+\b[^;]{0,60}\b(?:wired|weird|wrong|broken|fails?|failed|breaks?|"
                    r"errors?|not work\w*)\b"),
     "import-or-dependency-error", "the failure came with a library release (a version named as breaking or fixing it)"),
    # the training time said to grow with a setting ("不加sft_packing参数时，训练时间大概2天，加上sft_packing后训练时间激增到了
    # 15天", "training time jumps from 2 to 15 days with packing"): a duration compared, before the words that blame a
    # setting for an error
    (lazyre.compile(r"(?i)(?:训练时间|训练时长|耗时|每步时间)[^。]{0,16}(?:激增|暴增|增加到|变长|翻倍|暴涨|增长到|涨到)|"
                    # ("why time cost of update_actor increasing with steps": verl-project/verl#4460)
                    r"\b(?:(?:training|step|epoch|iteration) time|time (?:cost|consumption|taken|spent)|timing_s/\w+)\b"
                    r".{0,30}\b(?:increas\w*|jump\w*|grow\w*|grew|went up|doubl\w*|"
                    r"tripl\w*|explod\w*)\b"),
     "slow-training", "the training time grew (with a setting, or over the run)"),
    # argparse's own refusals named in words (Lib/argparse.py parse_args: "unrecognized arguments: %s",
    # parse_known_args: "the following arguments are required: %s")
    (lazyre.compile(r"(?i)\bunrecogni[sz]ed arguments?\b|\bthe following arguments are required\b|无法识别的参数"),
     "argument-error-other", "the program's argument parser refuses the arguments it was given"),
    # an argument the program asks for, named in the author's words ("报错需要提供reward_funcs", "it requires
    # reward_funcs", "must specify vllm_server_host"): a snake_case name, as options are spelled
    (lazyre.compile(r"(?i)(?:需要(?:提供|指定|设置|传入)|缺少|\bmust (?:specify|provide|set|pass)\s+|\brequires?\s+(?:the |an? )?"
                    r"(?:argument |parameter |option |flag )?)[`'\"]?-{0,2}[a-z]+_[a-z_]+"),
     "argument-error-other", "the program asks for an argument the run did not give"),
    # a setting named as what fixed it or as refused ("--report_to none 这个参数去掉就可以了", "去掉 adapter_name_or_path
    # 即可", "removing --use_vllm fixes it"), or refused in words ("没有这个参数", "kto_pair not available", "no such
    # parameter"): the run's arguments, not the code, are at fault
    (lazyre.compile(r"(?i)(?:去掉|删掉|删除|移除|去除|不加|不设置?)\s*`?-{0,2}[a-z]+_[a-z_]+|"
                    r"-{0,2}[a-z]+_[a-z_]+`?(?:\s+\S+)?\s*(?:这个|该)?(?:参数|选项)?\s*(?:去掉|删掉|删除|移除)(?:后|之后|就|即)|"
                    r"\b(?:remov|dropp?|delet)\w*\s+(?:the\s+)?`?--[a-z]+_?[a-z_]*`?.{0,40}\b(?:works?|worked|fix\w*|solv\w*|runs?)\b|"
                    r"没有(?:这个|该)参数|不支持(?:这个|该)参数|\bno such (?:argument|parameter|option)\b|"
                    r"\b[a-z]+_[a-z_]+`?\s+(?:is\s+)?not (?:available|supported|a valid (?:choice|option))\b"),
     "argument-error-other", "a setting of the run is refused, or removing one fixes it"),
    # an argument check's own words, quoted: "the error changed to `'cached_datasets' does not support cp`"
    (lazyre.compile(r"(?i)[`'\"]\w+[`'\"] (?:does not|doesn't|do not|is not) (?:support(?:ed)?|compatible with)\b"),
     "argument-error-other", "an argument check refuses a combination of options"),
    # an optional argument the program uses anyway: "value_model ... defaults to NoneType", "we have not defined"
    (lazyre.compile(r"(?i)\b[a-z]+_[a-z_]+\b.{0,60}\bdefaults? to (?:None(?:Type)?|null)\b"),
     "argument-error-other", "an argument left at its default of None is used as if it were given"),
    # a tokenizer without a chat template, in words ("Cannot apply chat template", "the tokenizer has no chat_template",
    # "does not lead to a new tokenizer with a chat template"): transformers refuses apply_chat_template then
    # (tokenization_utils_base.py get_chat_template: "... tokenizer.chat_template is not set ...")
    (lazyre.compile(r"(?i)\bcannot apply (?:the )?chat[_ ]template\b|\b(?:tokenizer|model)\b[^.。]{0,60}?\b(?:has no|have no|"
                    r"do(?:es)?(?:n't| not) (?:have|leads? to \w+ \w+ tokenizer with)|without|lacks?)\b[^.。]{0,12}?chat[_ ]template|"
                    r"chat[_ ]template (?:is )?(?:missing|not set|none)\b|没有\s*chat[_ ]?template"),
     "dataset-or-template-error", NO_CHAT_TEMPLATE),
    # the data step named as what failed ("DPO训练数据处理报错", "加载数据集时报错", "error while loading the dataset"), or a
    # column of the trainer's format named as missing ('"input_ids" not found in rloo trainer'); before the hang words:
    # "数据处理阶段报错，导致程序卡死" is the data's failure, the hang its consequence
    (lazyre.compile(r"(?i)(?:数据(?:集|处理|预处理|加载)|加载数据|\bdata(?:set)? (?:processing|preprocessing|loading)|"
                    r"\bloading (?:the )?data(?:set)?)[^。.!?\n]{0,24}?(?:报错|错误|出错|失败|\berror\b|\bfail(?:s|ed)?\b)|"
                    r"\b(?:error|fails?|failed) (?:when|while) (?:loading|processing|preprocessing|tokeni[sz]ing) (?:the |my )?"
                    r"data(?:set)?\b|"
                    r"[\"'`]?\b(?:input_ids|attention_mask|chosen|rejected|prompt|messages|completion)\b[\"'`]? "
                    r"(?:(?:is|are) )?(?:not found|missing)\b"),
     "dataset-or-template-error", "the dataset's loading or processing fails"),
    # GPUs that stay idle or barely used ("the GPU utilization remains consistently low", "GPU-Util 10%左右",
    # "显卡利用率很低"): before the hang words, since a run that waits on its CPU ("GPU util 0% while CPU is high, until
    # it stucks") is described with both
    (lazyre.compile(r"(?i)\b(?:gpu|cuda)[- _]?util(?:i[sz]ation|s)?(?: rate)?\b[^.;。\n]{0,40}?(?:\blow\b|\b0 ?%|"
                    r"\b(?:below|under|only|about|around|at most)\s+\d{1,2} ?%|\bdrops?\b|\bdropping\b)|"
                    r"\blow (?:overall )?gpu[- _]?util|\bgpus?\b[^.;:。\n]{0,30}\bidle\b|"
                    r"(?:显卡|gpu|GPU)\s*(?:的)?利用率.{0,8}?(?:低|不高|(?<!\d)\d{1,2}\s*%)|利用率(?:很|太|特别|非常)?低|"
                    # the GPUs' use said low in other words: "GPU usage is only 30%", "underutilized", "GPUs are not fully
                    # utilized" (dev37 3828 and 3830, dev68 7113)
                    r"\b(?:gpu|cuda)[- _]?(?:usage|load)\b[^.;。\n]{0,40}?(?:\blow\b|\b0 ?%|\b(?:below|under|only|about|"
                    r"around|at most|just|barely)\s+\d{1,2} ?%)|\b(?:gpu|cuda)[- _]?(?:usage|load|util\w*)\b[^.;。\n]{0,40}?"
                    r"\b(?:fluctuat\w*|not (?:fully|full|high))\b|\bunder-?utili[sz](?:ed|ation|ing)\b|"
                    r"\b0 ?% (?:gpu[- ])?(?:utili[sz]ation|util|usage)\b|"
                    r"\bgpus? (?:is|are) not (?:fully |being )?(?:utili[sz]ed|used)\b|"
                    # "only 1 of 8 GPU is working when rollout", "only one GPU is used", "只有一张卡在跑"
                    r"\bonly (?:\d+|one|a single|gpu ?\d+|the first|cuda:0)(?: (?:of|out of) (?:the )?\d+)?(?: gpus?| cards?| devices?)?\b"
                    r"[^.;。\n]{0,12}?\b(?:is|are) (?:being )?(?:working|used|utili[sz]ed|busy|active|running)\b|"
                    r"只有\s*(?:一|1)\s*(?:张|块|个)\s*(?:卡|gpu|GPU)\s*(?:在)?(?:跑|工作|使用|被使用|有负载)"),
     "gpu-underutilized", "the GPUs are mostly idle (low utilisation)"),
    # ASCII letter edges: "在一轮rollout后hang住" (a CJK character is a word character to `re`)
    # (not LLaMA-Factory's "freeze" fine-tuning: "采用freeze 调试时", "--finetuning_type freeze", "freeze tuning",
    # "freeze模式ppo", "freeze mode"; nor a setting's name: "freeze_vision_tower", "freeze_vit")
    # ("stalls before the first loss", "the job stalled at step 0": the same stop in another verb)
    (lazyre.compile(r"(?i)(?<![a-z])(?:hangs?|hanging|hung|stuck|stall(?:s|ed|ing)?|(?<!采用)(?<!使用)(?<!type )freez(?:e|es|ing)"
                    r"(?!\s*(?:调|训练|微调|模式|方式|tun|fine|train|layer|param|mode)|_)|froze|frozen|no progress|does(?:n't| not) move)"
                    r"(?![a-z])|卡住|卡死|卡在|卡再|不动了?|没有?反应|一直没有(?:任何)?(?:输出|日志|log)|停住|一直停(?:在|留)|一直(?:在)?等待|"
                    # "No errors, but the training has not started."
                    r"\b(?:has|have|had|did|does)(?:\s+not|n't)\s+(?:yet\s+)?(?:start|begin|begun)\w*|"
                    # "it never reaches the first step", "nothing is printed after model loading for an hour"
                    r"\bnever (?:reach|get|make)(?:es|s|ed)? (?:to |it to )?(?:the )?(?:first|1st) (?:training )?"
                    r"(?:step|iteration|batch)\b|\bnothing (?:is |was |gets |got )?(?:printed|logged|output)\b"
                    r"[^.;。\n]{0,40}\b(?:after|since|for)\b|\bno (?:new )?(?:output|logs?|log lines?) (?:for|since)\b|"
                    # "training stops progressing", "just stops, no output" (a stop that prints nothing: no crash)
                    r"\b(?:stops?|stopped|stopping) (?:progressing|making progress|updating|advancing|responding|logging|"
                    r"printing)\b|\bnothing happens\b|"
                    r"\b(?:is|was|are|were|seems?|became|becomes) (?:not responding|unresponsive)\b|"
                    r"\b(?:training|it|the run|the job|the process) (?:just |suddenly |simply )?(?:stops?|stopped)\b"
                    r"[^.;。\n]{0,20}\bno (?:more |new |further )?(?:output|logs?|log lines?)\b"),
     "hang", "the run stops making progress"),
    # completions that come back empty: "the output from vLLM is empty", "Generate nothing from VLLM output" (vllm#1185)
    (lazyre.compile(r"(?i)\b(?:outputs?|predictions?|responses?|completions?|generations?|generated text)\b[^.;]{0,20}?"
                    r"\b(?:is|are|becomes?|became|turns?|turned|gets?|got) (?:always |sometimes |often |all )?empty\b|\bempty (?:outputs?|predictions?|responses?|completions?|"
                    r"generations?|strings? returned)\b|\bgenerates? nothing\b|输出为空|输出是空|"
                    # "Model responses are always empty strings when doing GRPO training" (verl-project/verl#1170), "the
                    # completions are often empty" (huggingface/trl#3369), "giving empty response for all the query"
                    # (iusztinpaul/hands-on-llms#66); not an empty output now and then (modelscope/ms-swift#7281: a rollout
                    # "偶尔会输出空字符串", then an error of its own)
                    r"\b(?:outputs?|responses?|completions?|generations?|answers?)\b[^.;]{0,20}?\b(?:is|are|were|was) "
                    r"(?:always |often |all |mostly )?empty strings?\b|\b(?:giv(?:es|ing)|returns?|returning|outputs?|"
                    r"outputting|produc(?:es|ing)) (?:an? )?empty (?:strings?|responses?|outputs?|answers?)\b"),
     "output-degenerate", EMPTY_OUTPUT),
    # the same weights good one way and bad another: after a merge, under another engine or from a tuned folder
    # ("save_pretrained_merged ruins my model", "drastic drop in text generation when model is loaded using vllm",
    # "乱码 with vLLM, correct with transformers": unsloth#1267, unsloth#1832, QwenLM/Qwen3#178, vllm#952)
    (lazyre.compile(r"(?i)\b(?:merg\w*|export\w*|convert\w*)\b[^.;]{0,40}\b(?:ruins?|breaks?|broke|destroy\w*|"
                    r"corrupt\w*)\b[^.;]{0,20}\bmodel\b|\b(?:ruins?|breaks?) my (?:fine-?tuned |merged )?model\b|"
                    r"\b(?:drastic|huge|big|significant|large) (?:drop|difference|degradation|decline)\b[^.;]{0,40}"
                    r"\b(?:generation|quality|outputs?|responses?|inference|accuracy)\b|"
                    r"\b(?:quality|outputs?|responses?)\b[^.;]{0,30}\b(?:much )?worse (?:with|in|under|when)\b|"
                    r"\b(?:reduc\w*|lower|low|poor|bad) quality\b[^.;]{0,40}\b(?:when|with|after|using|loading)\b|"
                    r"(?i:vllm|transformers?|hf)[^。]{0,30}(?:乱码|胡言乱语)[^。]{0,60}(?i:vllm|transformers?|hf)[^。]{0,20}(?:正确|正常)"),
     "output-degenerate", SAME_WEIGHTS),
    # a fine-tuned model that runs on past its answer: "Model does not generate eos", "continues to ramble", "generate
    # question from it own and generate answer and repeat it" (trl threads on SFT with pad == eos)
    (lazyre.compile(r"(?i)\b(?:does(?:n't| not)|fails? to|never|won't|can(?:no|')t) (?:generate|output|emit|produce|predict|"
                    r"learn)s? (?:the |an? )?(?:eos|</s>|end[- ]of[- ](?:sequence|turn|text))(?:[_ ]token)?\b|"
                    r"\b(?:never|does(?:n't| not)|won't) stop(?:s)? (?:generating|talking|at the end)\b|"
                    r"\bnever (?:emits?|outputs?|generates?|produces?|closes?) (?:the )?(?:closing )?</\w+>|"
                    r"\bcontinues? to ramble\b|\bkeeps? (?:on )?(?:generating|rambling)\b|\bover-?generat\w*|"
                    # "generates endless text and never stops"
                    r"\bendless(?:ly)? (?:text|generation|outputs?|repetitions?)\b|(?<!training )(?<!run )(?<!job )(?<!process )\bnever stops\b|"
                    # "the generated text is not end until the max length" (vllm#1958)
                    r"\b(?:does(?:n't| not)|is not|never|won't) (?:end|stop)s? (?:until|till|before) (?:it reaches |reaching )?"
                    r"(?:the )?max(?:imum)?(?:[_ ](?:length|tokens|new[_ ]tokens))?\b|"
                    r"\bgenerates? (?:the next |a new |another )?questions? (?:from|on|by) (?:it|its) own\b|"
                    r"\brepeats? the (?:answer|question|response|prompt|input)\b|不会停止|停不下来|不输出(?:eos|结束符)"),
     "output-degenerate", NO_STOP),
    # every completion one character repeated: "answer after <think> suddenly all become !", "rollout的结果全是！", a run of
    # "!!!!" in a completion (verl, ms-swift and TinyZero threads; see BANG_OUTPUT)
    (lazyre.compile(r"(?i)\ball\s+(?:become|becomes|became|are|is|turn(?:s|ed)? into)\s*[\"'“`]?[!！]|"
                    r"(?:全是|全部是|全为|都是|全都是|全变成|都变成)\s*[\"'“`]?[!！]|\bexclamation (?:marks?|points?)\b|感叹号|"
                    r"(?:[!！]\s?){6,}"),
     "output-degenerate", BANG_OUTPUT),
    # about completions, not a person repeating a step ("reduce it and repeat: the same error")
    # ("Repeated Output After Initial Normal Output", "outputting repeated characters" until max_tokens; "outputs keep
    # repeating and filling up the context", "Model responses repeat a lot": unsloth#2424, open-r1#433, pyreft#142)
    (lazyre.compile(r"(?i)\b(?:gibberish|garbled|repeats? itself|repeat(?:s|ing)? the same (?:token|word|phrase|sentence)s?|"
                    r"repetitive (?:output|text|completion)s?|random (?:responses?|outputs?|text|tokens)|"
                    r"repeated (?:outputs?|text|characters?|tokens?|words?|phrases?|sentences?|answers?|responses?)|"
                    r"(?:outputs?|responses?|completions?|generations?) (?:keeps? |kept |starts? |started )?"
                    r"repeat(?:s|ed|ing)?(?! (?:the|this|that|it|my|every|each|after|for)\b)|"
                    r"(?:incorrect|nonsense|nonsensical|meaningless) (?:outputs?|responses?|generations?|completions?)|"
                    r"garbage (?:rollouts?|outputs?|generations?|completions?|"
                    r"responses?|text)|corrupt(?:s|ed)? (?:the )?(?:generations?|rollouts?|outputs?|completions?))\b|"
                    # the same words as a verb's object: "the response becomes nonsense", "it outputs garbage"
                    r"\b(?:becomes?|became|turns? into|turned into|outputs?|generates?|produces?) (?:complete |total |pure )?"
                    r"(?:nonsense|garbage|gibberish)\b|"
                    # the policy said to collapse into noise: "the rollout model collapsed and generated some random
                    # char or emoji" (modelscope/ms-swift#5523), "the model collapsed" (PeterGriffinJin/Search-R1#89)
                    r"\brandom (?:chars?|characters?|symbols?)\b|\b(?:model|policy|rollouts?|outputs?|generations?|"
                    r"responses?)\b (?:has |had |have |suddenly |then |gradually |completely )*collapsed\b|\bmodel collapse\b|"
                    # "模型输出一直重复", "输出一直存在重复", "推理阶段模型重复输出": the pair within one clause
                    r"乱码|重复输出|(?:输出|回答|生成|回复)[^。，,.]{0,8}重复|重复[^。，,.]{0,6}(?:输出|回答|生成)|"
                    # the outputs said to mean nothing after a verb of state ("responses become meaningless"), or in
                    # Chinese "胡言乱语" (talks nonsense), as 乱码 above
                    r"\b(?:outputs?|responses?|answers?|completions?|generations?)\b (?:are |is |become |becomes |became |"
                    r"get |gets |got |turn |turned )(?:completely |totally |mostly |all )?(?:meaningless|nonsensical|"
                    r"incoherent|unreadable)\b|胡言乱语|胡说八道|"
                    # repetition as a noun ("full of repetition", "severe repetition in the responses"), outputs said
                    # repetitive after a verb of state; "结果全是重复的内容"; answers beside the question (答非所问)
                    r"\b(?:full of|lots of|a lot of|severe|serious|heavy|endless|infinite) repetitions?\b|"
                    r"\b(?:outputs?|responses?|answers?|completions?|generations?)\b (?:are |is |become |becomes |became |"
                    r"get |gets |got )(?:very |so |too |quite |extremely )?(?:(?:long|verbose|lengthy) and )?repetitive\b|"
                    r"(?:结果|内容)[^。，,.]{0,6}(?:全是|都是|全部是)?重复|答非所问|乱七八糟|"
                    # answers said too short ("模型回答很短，只有几个字", "responses are very short")
                    r"(?:回答|输出|回复|生成)(?:的)?(?:内容|长度)?(?:很|特别|非常|太|变得?)短|只有几个字|"
                    r"\b(?:responses?|outputs?|completions?|answers?)\b (?:are|is|become|became|get|got) (?:very |too |extremely |"
                    r"really )?short\b|"
                    # "weird symbols", "strange characters"; one answer to every question
                    r"\b(?:weird|strange|odd|unknown) (?:symbols?|characters?|chars?|tokens)\b|"
                    r"\b(?:outputs?|responses?|answers?|generations?|completions?)\b (?:is |are |become |becomes |became |looks? |"
                    r"seems? )(?:very |quite |really |so |all )?(?:abnormal|strange|weird|odd|broken)\b|"
                    r"(?:输出|回答|回复|生成)(?:的)?(?:结果|内容)?(?:异常|不正常|很奇怪|奇怪)|"
                    r"\bthe same (?:token|word|phrase|sentence|text|thing|answer|output)s? (?:repeatedly|over and over|again and "
                    r"again)\b|\b(?:only )?(?:outputs?|generates?|produces?) (?:only )?(?:special tokens|pad tokens|<\|endoftext\|>|"
                    r"<unk>|<pad>)|"
                    r"\b(?:mixed|mixing|mixes) (?:languages?|chinese and english|english and chinese)\b|\blanguage mixing\b|"
                    r"\b(?:chinese|english) (?:characters |words |tokens )?mixed with (?:english|chinese)\b|中英(?:文)?混(?:杂|合)|"
                    r"\b(?:outputs?|responses?|generations?|completions?)\b (?:is |are |gets? |got )?(?:stuck )?in (?:a|an) "
                    r"(?:infinite |endless )?loop\b|(?:输出|生成)[^。，,]{0,6}(?:死)?循环|"
                    r"\b(?:outputs?|generates?|gives?|returns?|produces?|answers? with) the same (?:answer|response|text|output|"
                    r"sentence|result|thing) (?:(?:for|to) (?:every|all|each|any)|regardless|no matter)\b"),
     "output-degenerate", "the completions are garbled or repetitive"),
    # a loss of exactly 0 said in words, in a run that scores nothing ("loss全为0" with --fp16, "Loss突然增大，然后变为0",
    # "fp16 finetune will loss=0": an fp16 overflow, or a batch without a supervised token); an RL run's loss of 0 is
    # its rewards' words (above)
    # (损失 is "loss": "损失为0" (hiyouga/LlamaFactory#1989), "损失一直是0.0" (modelscope/ms-swift#6845))
    (lazyre.compile(r"(?i)^(?!.*(?:grpo|ppo|rloo|dapo|gspo|reward|奖励)).*(?:(?:(?<![a-z_])loss(?![a-z_])|损失)[^。.;]{0,12}?"
                    r"(?:全|都|一直|始终|总是)?\s*(?:为|是|变为|变成|降为|降到|掉到|等于|=)\s*0(?:\.0+)?(?![.\d])|"
                    r"(?<![a-z_])loss(?![a-z_]) (?:is|was|becomes?|became|goes to|went to|drops? to|dropped to|falls? to|fell to|"
                    r"stays? at|turns? (?:in)?to|turned (?:in)?to) (?:exactly |always )?(?:0|zero)(?:\.0+)?(?![.\d]))"),
     "loss-nan-or-inf", LOSS_ZERO),
    # ("训练时候有时候速度会变得很慢": the words between the subject and 慢 vary; "gets slower and slower", "slows down")
    (lazyre.compile(r"(?i)\b(?:very|too|extremely) slow\b|\bslow(?:er)? (?:than|training|rollout)|\bslower and slower\b|"
                    r"\b(?:training|steps?|iterations?|it|generation|rollouts?) (?:gets?|becomes?|got|became) (?:much |very )?"
                    r"slower\b|\b(?:training|steps?|iterations?|generation|rollouts?) slows? down\b|"
                    # a comparison with a factor: "it seems to be much slower on my side with G=8" (huggingface/trl#2610),
                    # "Training speed much slower", "significantly slower by almost 50%" (MrNeRF/LichtFeld-Studio#1169),
                    # "twice as slow", "3x slower", "takes 2 times longer"
                    # (never "Using `safe_serialization` is 10x slower": a library's advice about an option)
                    r"(?<!` is )\b(?:much|way|far|significantly|considerably|dramatically|\d+(?:\.\d+)?\s*(?:x|times)|"
                    r"several times) slower\b|\btwice as slow\b|"
                    # a duration said longer by a factor ("takes 3x longer", "took twice as long"), not a completion
                    r"\b(?:tak(?:e|es|en|ing)|took)\b.{0,30}\b(?:(?:\d+(?:\.\d+)?\s*(?:x|times)|several times) longer|"
                    r"twice as long)\b|"
                    r"慢(?:了)?\s*(?:\d+(?:\.\d+)?|[一两二三四五六七八九十几])\s*倍|"
                    # "Extremly Low it/s on rtx 3090", "Why I've got low speed?"
                    r"\b(?:low|slow) (?:it/s|its/s|speed|throughput|tokens?/s|tok/s)(?![\w/])|"
                    r"(?:训练|速度|迭代|每步|每个?step).{0,8}(?:很|太|特别|非常|变得?|越来越|反而|更)慢|速度慢|"
                    # "训练一个step需要十几分钟", "rollout阶段特别耗时"
                    r"(?:一个|每个?|单个)\s*(?:step|步|iter|iteration|epoch)\s*(?:需要|要|耗时|花了?|大概|约)\s*(?:十几|几十|几|"
                    r"[\d一二两三四五六七八九十]+)\s*(?:个)?(?:分钟|小时|秒|天)|(?:特别|非常|很|太|极其)耗时|"
                    r"耗时(?:特别|非常|很|太)(?:长|久|多)|"
                    # a duration said too long: "step1 参数更新时间超长" (verl-project/verl#496), "训练时间很长"
                    r"(?:时间|耗时)(?:超|很|太|特别|非常)长|"
                    # the run said slow outright: "training is too slow", "training was too slow", "training is extremely
                    # slow" (dev37 3827, dev68 7111, dev44 4410)
                    r"\b(?:training|train|rollouts?|generation|steps?|epochs?|iterations?)\b (?:is|are|was|were|seems?|"
                    r"looks?|feels?|becomes?|became|gets?|got|runs?|ran|goes|went) (?:so |very |too |extremely |really |"
                    r"quite |super |incredibly |unusually |painfully |much |pretty )?slow\b|"
                    # a step's time said with its verb: "Each rollout step takes ~20 min on 4xA100"
                    r"\b(?:each|every|one|a|per) (?:training |rollout |generation |optimi[sz]ation )?(?:step|iteration)s? "
                    r"(?:takes?|took|needs?|lasts?|costs?) (?:about |around |nearly |over |almost |~\s?)?\d+(?:\.\d+)?\s*(?:mins?|"
                    r"minutes?|h|hrs?|hours?)\b|"
                    # the same in a question, the verb before it: "Why is training so slow?", "why is my GRPO rollout this slow"
                    r"\b(?:training|train|rollouts?|generation|inference|steps?|epochs?|iterations?|grpo|ppo|dpo|sft)\b "
                    r"(?:so|too|this|that|extremely|unusually) slow\b|"
                    # where the time goes: "It takes the majority of time in generation"
                    r"\b(?:takes?|taking|took|spends?|spent|spending)\b.{0,20}\b(?:the )?(?:majority|most|bulk) of (?:the )?"
                    r"(?:time|step time|training time)\b|\bmost of the time is (?:spent|taken)\b|"
                    # a step's time with its unit, said by a person ("GRPO (80 seconds/step)", "about 7 min per step")
                    r"\b\d+(?:\.\d+)?\s*(?:s|secs?|seconds?|mins?|minutes?|hrs?|hours?)\s*(?:/|per |an? |each )"
                    r"(?:training )?(?:step|iteration|iter)\b|每(?:个)?\s*(?:step|步)\s*(?:要|需要|耗时|大概|约)?\s*\d+|"
                    # the speed asked about: "training speed is low, is it right?" (wmcnally/kapao#75), "1 epoch takes
                    # 2 hours is that normal? How can I speed up training time?" (xuannianz/keras-CenterNet#20), "It
                    # was 10 hours per epoch ... is that normal?" (qhduan/just_another_seq2seq#8), "Any idea to speed
                    # up training?" (eveningglow/multitask-CycleGAN#2), "Is there any way to shorten the training
                    # time?" (MIC-DKFZ/nnUNet#764), "请问这个训练速度正常吗？是否有提升训练速度的方案？" (hiyouga/EasyR1#39)
                    r"\b(?:training |train |step |rollout |generation )?(?:speed|throughput) (?:is|was|seems|looks) (?:very |too |so |"
                    r"quite |really |extremely )?(?:low|slow)\b|"
                    # "the speed is only 0.05 it/s", "only 1.2 tokens/s"; "training speed dropped significantly after
                    # ..."; "the estimated time is 300 hours", "预计训练时间要200个小时"
                    r"\b(?:speed|throughput) (?:is |was )?only\b|\bonly \d+(?:\.\d+)?\s*(?:it/s|its/s|s/it|tokens?/s|tok/s|"
                    r"samples?/s)(?![\w/])|\b(?:speed|throughput) (?:dropped|drops|decreased|decreases|degraded|degrades|"
                    r"went down|goes down|falls|fell)\b|\b(?:estimated|expected|remaining) (?:training )?time\b[^.;?]{0,20}?"
                    r"\b\d{2,}\s*(?:hours|hrs|h|days)\b|预计(?:训练)?(?:时间)?(?:要|需要|为|是)?\s*\d{2,}\s*(?:个)?(?:小时|天)|"
                    r"\b(?:speed(?:ing)? up|accelerat(?:e|ing)|shorten(?:ing)?) (?:the |my |our |this )?(?:grpo |rl |"
                    r"model )?(?:training|train|rollouts?|generation|training time|training process)\b|"
                    r"\b(?:tak(?:e|es|ing)|took|it was|spen(?:d|ds|t))\b[^.?!;]{0,50}?\b\d+(?:\.\d+)?\s*(?:hours?|hrs?|h|"
                    r"days?|mins?|minutes?)\b[^?!;]{0,60}\bis (?:it|that|this) (?:normal|expected|right|reasonable)\b|"
                    r"\bis it normal that (?:it |training |one |an |each )?(?:takes?|took)\b|"
                    r"\bis (?:this|the|my|that) (?:training |train )?speed (?:normal|expected|right|reasonable)\b|"
                    r"\btraining speed (?:issue|problem)s?\b|"
                    r"\b(?:training|epochs?|steps?|iterations?) (?:takes?|took|taking) (?:so|too|very|extremely) long\b|"
                    r"训练速度(?:正常吗|是否正常|问题|太低|很低)|(?:提升|提高|加快|加速)(?:训练|推理|rollout|生成)(?:速度)?|"
                    # "training takes forever", "it takes forever to train"; "how to accelerate?", "how can I speed it
                    # up" (not accelerate the library: "how to accelerate launch ...")
                    r"\b(?:training|train|steps?|epochs?|rollouts?|generation)\b[^.?!;]{0,20}\b(?:takes?|took|taking) "
                    r"forever\b|\b(?:takes?|took|taking) forever to (?:train|finish|complete|generate|run (?:an?|one|each) "
                    r"(?:step|epoch))\b|\bhow (?:to|can (?:i|we)|do (?:i|we)|could (?:i|we)) (?:accelerate|speed (?:it |this "
                    r"|things |training |up training |that )?up)\b(?! launch| config| env)|"
                    # several GPUs slower than one: "多卡训练比单卡还慢", "multi-GPU training is slower than single GPU"
                    r"(?:多卡|多机|多GPU|多张卡|双卡)[^。，,]{0,12}比单(?:卡|机|GPU)[^。，,]{0,4}慢|"
                    # a part of the step named the bottleneck ("the rollout phase is the bottleneck"), training asked
                    # to go faster, a duration of days said for an epoch or a run ("一个epoch需要跑三天")
                    r"\b(?:is|are|was|were|becomes?|became) (?:the|a) (?:main |major |big |huge )?bottleneck\b|"
                    # (asked for, not promised: unsloth's banner "will now patch everything to make training faster!")
                    r"\b(?:how (?:to|can (?:i|we)|do (?:i|we)|could (?:i|we))|ways? to|tips? to|want to|help (?:me )?)"
                    r" make (?:the )?(?:training|train|it|this|rollouts?|generation) (?:run )?faster\b|"
                    r"(?:需要|要|得)(?:跑|训练|训)?\s*(?:好几|几|[一二两三四五六七八九十\d]+)\s*(?:天|周)|"
                    # the time or speed as the topic, as titles put it ("GRPO training speed", "[Question] training
                    # time", "Long training time for ...", "Low training efficiency", "训练效率低", "训练耗时过长")
                    r"^\s*(?:\[[^\]]{1,20}\]\s*)?(?:[\w.-]+\s+){0,3}(?:training|train|rollout|generation) (?:speed|time|"
                    r"efficiency)\s*[?？]?\s*$|"
                    r"\b(?:long|slow|low|poor|excessive|huge|high) (?:training|rollout|generation|inference) (?:time|speed|"
                    r"efficiency|throughput)\b|\b(?:training|rollout|generation) efficiency (?:is |was )?(?:very |too |so )?"
                    r"(?:low|poor|bad)\b|\b(?:expected|estimated|total) training time\b|"
                    r"\bhow long (?:does|should|will|would) (?:it|training|one epoch|an epoch|a step) take\b|"
                    r"训练(?:效率|速度)(?:很|太|特别|非常)?(?:低|慢)|训练(?:耗时|时间|时长)(?:过|太|很|特别|非常)?长|"
                    # "taking too much time", "takes too long"; "It took 12 hours to finish 100 steps"
                    r"\b(?:tak(?:e|es|ing)|took|spen(?:d|ds|t|ding)) (?:too much time|too long|so long)\b|"
                    r"\b(?:took|takes?|taking|needs?|needed)\s+(?:about |around |over |more than |nearly |almost )?\d+(?:\.\d+)?\s*"
                    r"(?:hours?|hrs?|days?)\s+(?:to|for)\s+(?:finish |train |complete |run |do )?(?:\d+|one|an?|each|every) "
                    r"(?:steps?|epochs?|iterations?)\b|"
                    # slower from step to step: "slower and slower", "越训越慢"
                    r"\bslower and slower\b|\bgets? slower\b|越(?:训|跑|来)越慢"),
     "slow-training", "training is slow"),
    # a LoRA run's output holding only the adapter, as PEFT saves it (peft_model.py PeftModel.save_pretrained writes
    # adapter_config.json and adapter_model.*): "the output only hava adapter_config.json,adapter_model.bin" (peft#309)
    # a saved model said to weigh a few hundred MB where the full weights take GB: the seed article on ms-swift's
    # load_args ("保存的checkpoint文件大小异常,仅有100多MB", where ~14 GB was expected) tells it so
    (lazyre.compile(r"(?i)\bonly\s+(?:ha\w{1,3}\s+|contains?\s+|saved?\s+|got\s+)?(?:an?\s+|the\s+)?"
                    r"adapter_(?:config|model)\b|只有\s*adapter_(?:config|model)|"
                    # a full fine-tuning said to save an adapter ("full parameter training but the output contains
                    # adapter_model.safetensors", "全参训练保存的是lora"): the seed article's load_args case
                    r"\bfull(?:[- ]parameter)? (?:fine-?tuning|training|train|sft)\b[^.;]{0,60}\b(?:only (?:an? )?|is (?:an? )?|"
                    r"contains? |saves? |saved )?(?:lora )?adapter(?:_model|_config)?\b|全参(?:数)?(?:训练|微调)[^。]{0,30}(?:adapter|lora)|"
                    r"(?:checkpoint|ckpt|模型|权重|saved model|model files?|全参(?:数)?(?:训练|微调))[^。.\n]{0,24}(?:仅有|只有|仅|\bonly(?: has| is)?)"
                    r"\s*\d{1,3}(?:\.\d+)?\s*多?\s*M(?:i?B)?(?![a-z])"),
     "checkpoint-adapter-only-load-args", ADAPTER_ONLY),
    # a saved checkpoint said not to load ("cannot load the saved checkpoint", "fails to resume from the last
    # checkpoint", "checkpoint加载失败", "无法加载保存的模型")
    (lazyre.compile(r"(?i)\b(?:cannot|can't|can not|could not|couldn't|fails? to|failed to|unable to) (?:load|open|read|"
                    r"resume from) (?:the |my |a |our )?(?:saved |last |latest |trained |fine-?tuned )?(?:checkpoint|ckpt|"
                    r"safetensors|model weights|weights)\b|(?:checkpoint|ckpt|权重|保存的模型)[^。，,]{0,6}(?:加载|读取)(?:失败|不了|出错)|"
                    r"(?:无法|不能)(?:加载|读取)[^。，,]{0,6}(?:checkpoint|ckpt|权重|保存的模型)"),
     "checkpoint-corrupt", "a saved checkpoint does not load"),
    # the disk said to be full in words ("磁盘满了", "硬盘空间不足", "the disk is full"): the ENOSPC line is GD7xx's
    (lazyre.compile(r"(?i)(?:磁盘|硬盘)(?:空间)?(?:满了|已满|不足|不够)|\b(?:the )?(?:disk|drive|storage)(?: space)? "
                    r"(?:is|was|got|gets|became) (?:completely )?full\b|\bran out of (?:disk|storage) space\b"),
     "disk-full", "the disk is full"),
    # last (a size beside another symptom is not the failure): a saved weights file of a few hundred bytes (an
    # adapter saved from an empty state dict) or checkpoints of tens of GB, sizes people quote from `ls -l` / `du -sh`
    (lazyre.compile(r"(?i)\b(?:adapter_mod\w*\.(?:bin|safetensors)|pytorch_model\.bin|model\.safetensors|checkpoint)\b"
                    r".{0,80}?\b\d{1,4} ?bytes?\b|\b\d{1,4} ?bytes? (?:file|adapter|checkpoint)\b"), "checkpoint-corrupt",
     "a saved weights file of only a few hundred bytes"),
    (lazyre.compile(r"(?i)\b(?:checkpoints?|global_step\w*|saved? (?:model|folder|files?))\b.{0,80}?"
                    r"\b(?:over |more than |about |nearly )?\d+(?:\.\d+)? ?(?:GB|TB|G)\b|"
                    # "权重文件变大了" (the weights got bigger than the original), "the saved model is larger than the base"
                    r"(?:权重|模型|checkpoint)[^。，,.]{0,8}(?:变大|变得更大|比原(?:始|来)?的?(?:模型|权重)?(?:还)?大)|"
                    r"\b(?:model|checkpoint|weights?|adapter|output)\b[^.;]{0,20}\bsize\b[^.;]{0,12}\b\d+(?:\.\d+)?\s*[GT]i?B "
                    r"instead of \d+(?:\.\d+)?\s*[GT]i?B\b|"
                    r"\b(?:weights?|model|checkpoints?)\b[^.;]{0,30}\b(?:bigger|larger) than (?:the )?(?:original|base)\b|"
                    # a size complained of without a number: "Why is the lora_model so large", "LoRA权重很大"
                    r"\b(?:lora|adapter|checkpoints?)\w*\b[^.;。\n]{0,25}\b(?:so|too|very|extremely|really) (?:large|big|huge)\b|"
                    r"(?i:lora|adapter|checkpoint|权重)[^。，,]{0,8}(?:很大|太大|特别大|非常大|过大)|"
                    # DeepSpeed's checkpoint files listed with their sizes: "`zero_pp_rank_0_mp_rank_00_optim_states.pt`
                    # (13GB)" (each rank's optimizer shard, the model states beside them)
                    r"_(?:optim|model)_states\.pt`?\s*\(?\d+(?:\.\d+)?\s*[GT]i?B\b|"
                    r"\b(?:files?|checkpoints?)\b[^.;。\n]{0,40}\b(?:that|so|too) (?:huge|large|big)\b|"
                    r"\b(?:every|each|all) checkpoints?\b[^.;]{0,12}\b(?:saves?|stores?|includes?|contains?|keeps?) (?:the )?"
                    r"optimi[sz]er\b|\b\d+(?:\.\d+)?\s*[GT]i?B\b[^.;]{0,40}\boptimi[sz]er states?\b|"
                    # a size that grows from save to save: "checkpoints growing from 15 GB to 43 GB", "the checkpoint size
                    # keeps increasing with each save", "checkpoint越来越大"
                    r"\b(?:checkpoints?|ckpts?|saved (?:model|weights)|save folder)\b(?: (?:size|files?|folders?))?"
                    r"(?: (?:keeps?|kept))? (?:grow(?:s|ing)?|grew|increas(?:es|ing|ed)|gets? (?:bigger|larger)) (?:from "
                    r"\d|with each|every|after each|over)|(?:checkpoint|权重|ckpt)[^。，,]{0,6}越来越大|"
                    # the seed article's "模型体积从15GB膨胀到43GB" (the model's size swelled from 15 GB to 43 GB)
                    r"(?:模型|权重|checkpoint|ckpt|体积)[^。，,]{0,12}膨胀"),
     "checkpoint-bloat",
     "checkpoints that take tens of GB"),
)

START = lazyre.compile(r"(?i)\bsteps? (?:is |are |stays? |remains? )?(?:still |at )?0\b|\b(?:step 0|first step|at the (?:start|beginning)|before (?:training|the first)|never starts?)\b|"
                    # "hangs after model download / load", "after loading the model", "right after the vllm engine
                    # creation step", "never becomes ready"
                    r"\bafter (?:the )?(?:[\w-]+ ){0,2}(?:download\w*|load\w*|creat\w*|init\w*|launch\w*)\b|"
                    r"\bnever (?:becomes? )?ready\b|\b(?:has|have|had|did|does)(?:\s+not|n't)\s+(?:yet\s+)?start|"
                    # a stale lock of DeepSpeed's op build (torch's FileBaton under ~/.cache/torch_extensions): start-up
                    r"\btorch_extensions\b|等待(?:\s*(?i:vllm))?\s*(?:server|服务)|"
                    # "hangs during vLLM initialization", "while loading the model"; "once the tqdm bar appears", a
                    # bar at 0
                    r"\b(?:during|while|in) (?:the )?(?:[\w-]+ ){0,2}(?:initiali[sz]\w*|start-?up|loading)\b|"
                    r"\b(?:when|once|after|as) (?:the )?(?:tqdm|progress bar)\b|"
                    # a rollout server's start-up, the last thing before the first step ("hangs after SGLang CUDA graph
                    # capture & server startup")
                    r"\bafter (?:the )?(?:[\w-]+ ){0,2}(?:CUDA graph captur\w*|graph captur\w*|server (?:start-?up|is ready)|"
                    r"engine (?:start-?up|is ready))\b|\b(?:tqdm|progress bar) (?:bar )?"
                    r"(?:starts?|appears?|shows? up)\b|\bstuck at 0\s?%|\b0/\d+\b|"
                    # a process group that never forms is a start-up hang wherever it is created
                    r"\binit_process_group\b|\brendezvous\b|"
                    # no progress shown at all: "I cannot see the progress bar", "the progress bar never appears"
                    r"\b(?:can(?:no|')t|don'?t|do not|doesn'?t|does not|never) (?:even )?(?:see|get|show|appear)s? (?:the |a |any )?"
                    r"progress bar\b|\bprogress bar (?:never|does(?:n't| not)) (?:appears?|shows?)\b|"
                    r"开始|第一步|启动|加载(?:完|后|之后)|初始化|直接卡|一开始|刚开始")

# a symptom word the sentence denies: "显存并没有OOM", "no OOM", "not stuck", "it doesn't hang"
DENIED = lazyre.compile(r"(?i)(?:并没有|没有|没|并未|未|不是|\bno|\bnot|\bwithout|n't|\bnever)\s*(?:\w+\s+)?$")

PASTE_NEXT = {
    "vllm-version-incompatible": "`pip list | grep -E 'vllm|torch|transformers|trl|swift'` and the first error the run "
                                 "printed",
    "disk-full": "`df -h` of the output folder and the caches (HF_HOME, TMPDIR, /dev/shm), and the error line of the failed "
                 "write",
    "cuda-oom": "the traceback of the out-of-memory error and `nvidia-smi` taken at the failure",
    "vllm-oom-or-kv-cache": "the vLLM engine's start-up lines (its memory profile: model weights, KV cache) and "
                            "`nvidia-smi` taken when it fails",
    "host-oom-killed": "`dmesg -T | grep -i -E 'killed|oom'` and the log's last 100 lines",
    "nccl-timeout": "every rank's log around the first error (search for Traceback, Error or Killed before the first NCCL error or timeout)",
    "loss-nan-or-inf": "the metric rows of the steps before and at the first NaN",
    "grad-norm-zero": "a few metric rows (loss, grad_norm, reward_std) and the launch command",
    "reward-zero-or-flat": "a few metric rows (reward, reward_std, frac_reward_zero_std) and one completion with its reward",
    "hang-at-start": "the log's last 200 lines and `py-spy dump --pid PID` of each process while it is stuck",
    "hang-mid-training": "the log's last 200 lines and `py-spy dump --pid PID` of each process while it is stuck",
    "output-degenerate": "two or three completions as the log prints them, with the sampling settings",
    "gpu-underutilized": "`nvidia-smi` taken while it runs (or `nvidia-smi dmon -s u` for a minute), the step timings and "
                         "the launch command",
    "slow-training": "the step timings (the bar's s/it or the metric rows' step time) and the launch command",
    "checkpoint-corrupt": "`ls -l` of the checkpoint folder and the lines of the script that save the model",
    "argument-error-other": "the program's own error message (its last 50 lines) and the launch command",
    "eval-batch-divisibility": "the error message with its numbers and the launch command (per_device_eval_batch_size, "
                               "num_generations, the number of processes)",
    "batch-divisibility": "the error message with its numbers and the launch command (the batch sizes, num_generations, "
                          "the number of GPUs)",
    "reward-function-error": "the traceback the reward call raised and the reward function's code",
    "checkpoint-bloat": "`du -sh` of one checkpoint folder's entries and the save settings (save_steps, save_only_model, "
                        "save_total_limit)",
}


# a symptom named as what to avoid, not as what happened: "To avoid OOM problem, you can consider to reduce ...",
# "in case of OOM", "为了防止OOM"
ADVICE = lazyre.compile(r"(?i)(?:\bto (?:avoid|prevent)|\bavoid(?:ing)?|\bprevent(?:ing)?|\bin case (?:of|you (?:get|hit|see))|"
                         r"\breduce the (?:risk|chance) of|避免|防止)\s*(?:(?:the|an?|any|getting|hitting)\s+)?$|"
                         # denied at a distance: "I don't think the issue has anything to do with OOM"
                         r"(?i:\b(?:nothing|anything) to do with|\bnot (?:caused by|related to|due to|because of))\s*(?:the\s+)?$")

# a run that works on one node and stops on several: what differs is the communicator across the nodes, which forms
# in the first collective (the process group's, DeepSpeed's or DDP's broadcast of the weights) before any step
MULTI_NODE = lazyre.compile(r"(?i)\bmulti[- ]?nodes?\b|\b(?:two|2|several|multiple) (?:nodes|machines)\b|多机|多节点|两台|跨机")

ONE_NODE = lazyre.compile(r"(?i)\b(?:single|one)[- ](?:node|machine)\b|单机|单台|单节点|一台")

# words that place a stop after training made progress: "hangs midway", "after a few epochs", "after several parameter
# updates", "stuck at 5/4752", "randomly freezes", "训练几个epoch就会卡住", "中途卡住", "一轮rollout后"
MID = lazyre.compile(r"(?i)\bmid-?(?:way|training|run)\b|\bin the middle of\b|\b(?:randomly|suddenly|intermittently|"
                      r"sometimes)\b|\bafter (?:a few|a couple of|some|several|many|hundreds of|thousands of|\d+) "
                      r"(?:\w+ ){0,3}(?:steps?|epochs?|iterations?|updates?|rounds?|batches|hours?|minutes?)\b|"
                      r"\b(?:at|around|after) (?:step|iteration|epoch) [1-9]\d*\b|(?<![\d.])[1-9]\d*/\d+\b|"
                      # "Stuck during training", "hangs after saving the checkpoint" (a save comes after steps)
                      r"\bduring (?:the )?training\b|\bafter sav(?:ing|ed)\b|"
                      # "always freezes at the same step" (重复多次实验必然会卡死在相同的step): steps ran before it
                      r"\b(?:the )?same (?:step|iteration|epoch|batch)\b|(?:相同|同一|一样)的?个?\s*(?:step|步|epoch|轮)|"
                      r"中途|途中|训练中|训练过程中|训练了?(?:几|一段|一会|\d+)|跑了(?:几|一段|一会|\d+)|(?:几|若干)个?\s*(?:epoch|step|steps|步|小时)之?后?|"
                      r"一轮.{0,12}后|随机|偶尔|有时|(?:训练|跑)(?:到)?(?:一半|中间)|\bhalf ?way\b|"
                      r"保存(?:checkpoint|ckpt|模型|权重)|(?:到|跑了?|训练了?)一定(?:的)?(?:步数|step|轮数|时间)|"
                      # a save comes after steps: "Saving checkpoint hangs", "`accelerator.save_state()` will hang"
                      r"\bsaving (?:the |a )?(?:checkpoints?|model|state|weights)\b|\bsave_(?:state|model|pretrained|checkpoint)\b|"
                      # "runs fine for about 300 steps and then hangs": steps ran first
                      r"\b(?:runs?|ran|trains?|trained|works?|worked|goes|went)(?: fine| well| normally| ok)? for (?:about |around |"
                      r"roughly |~|the first )?\d+ (?:steps?|epochs?|iterations?|hours?|minutes?)\b|"
                      # "hangs during the second rollout", "at the 3rd epoch": an earlier one went through
                      r"\b(?:second|third|fourth|fifth|[2-9](?:nd|rd|th)|\d{2,}(?:st|nd|rd|th)) (?:rollout|epoch|step|iteration|"
                      r"round|batch|evaluation|eval|save)\b|"
                      # an evaluation comes after steps: "freezes after the first evaluation"
                      r"\bafter (?:the )?(?:first |1st )?(?:evaluation|eval|validation)\b|"
                      # "stuck at 45%" (a bar part of the way; not 0% nor 100%)
                      r"\b(?:stuck|hangs?|hung|froze|freezes|stops?|stopped) (?:at|around) [1-9]\d?(?:\.\d+)?%|"
                      # "训练到300步的时候卡住了", "跑到第2个epoch卡住": a step count reached before the stop
                      r"(?:训练|跑|运行)(?:到|至)(?:第)?\s*[1-9]\d*\s*(?:步|个?\s*(?:steps?|epochs?|iters?)|轮)")

# the paste says no error or traceback was printed ("没有具体报错信息", "no error message", "without any traceback")
NO_ERROR = lazyre.compile(r"没有(?:任何|具体)?(?:的)?(?:报错|错误)|无(?:任何)?报错|不报错|没报错|"
                           r"\bno (?:error|traceback|exception)s?\b|\bwithout (?:any )?(?:error|traceback)", re.I)

# a pinned release named in the description ("simply install `vllm==0.7.3` instead", "pin transformers==4.52.4")
PINNED = lazyre.compile(r"\b[A-Za-z][\w.-]*==v?\d+\.\d+(?:\.\d+)?(?:\.?post\d+|rc\d+)?\b")

# what to check while the lines are fetched, for a symptom whose usual cause the words alone point at
# what to check meanwhile for a symptom narrower than its category
MEANWHILE_SAID = {
    FORMAT_ZERO: format_meanwhile(),
    EVAL_BATCH_SAID:
        "Meanwhile: GRPO trainers check the eval batch as they check the train batch (trl: per_device_eval_batch_size x "
        "the number of processes must be a multiple of num_generations): raise per_device_eval_batch_size until that "
        "product is one, or turn evaluation off (eval_strategy no).",
    BATCH_SAID:
        "Meanwhile: a GRPO step splits its batch into groups of num_generations completions and shares it evenly over "
        "the GPUs (trl: per-device batch x processes x gradient accumulation steps; verl: train_batch_size x "
        "rollout.n over the mini-batches and GPUs): change the batch size or num_generations so that every division "
        "the message names comes out whole.",
    NO_REWARD_FN:
        "Meanwhile: frameworks look a reward function up in a table of their own: verl by the sample's data_source "
        "(default_compute_score knows only the sources it ships: for your own data set custom_reward_function.path and "
        "custom_reward_function.name), ms-swift by the names given to --reward_funcs (its orms registry, extended by "
        "a plugin file passed with --external_plugins); the name used must be one the table holds.",
    CHECKPOINT_NO_GRAD: f"Meanwhile: c{CHECKPOINT_FIX[1:]}",
    NO_CHAT_TEMPLATE:
        "Meanwhile: a base model's tokenizer usually has no chat template (tokenizer_config.json without "
        "`chat_template`): give it one (copy `chat_template` from the instruct model's tokenizer_config.json, or set "
        "tokenizer.chat_template), name the framework's template for the model (LLaMA-Factory --template, ms-swift "
        "--template), or train and prompt in plain text without apply_chat_template.",
    LOSS_ZERO:
        "Meanwhile: a training loss of exactly 0 is not convergence: under fp16 the loss or its gradients overflow "
        "(train in bf16 on GPUs that have it, or in fp32, and compare), or a batch holds no supervised token "
        f"({NO_LABEL_CAUSES}); {NO_LABEL_CHECK}.",
    SILENT_END:
        "Meanwhile: a process that ends without a traceback or a message was most often killed by a signal it cannot "
        "catch: the kernel's OOM killer sends SIGKILL when host RAM runs out (each rank loading a whole model at "
        "once is the usual cause); `dmesg -T | grep -i -E 'killed|oom'` shows it, and the launcher's exit code -9 "
        "says so. Load with low_cpu_mem_usage, fewer processes at once, or more RAM.",
    EMPTY_OUTPUT:
        "Meanwhile: an empty completion is the end-of-sequence token chosen first: under greedy decoding (temperature "
        "0) a prompt without the model's chat template often ends at once; give the prompt its template, ask for at "
        "least one new token (vLLM SamplingParams min_tokens=1) and read each output's finish_reason.",
    SAME_WEIGHTS:
        "Meanwhile: when the same model answers well one way and badly another, compare what differs between the two "
        "ways: the prompt (the chat template applied in one path, the training format in the other), the weights "
        "read (a merged or exported folder, its dtype, tied embeddings or a resized vocabulary that an older engine "
        "release reads wrongly), and the sampling settings; loading the merged folder with transformers tells the "
        "weights from the engine.",
    ADAPTER_ONLY:
        "Meanwhile: a LoRA run saves only its adapter (adapter_config.json and adapter_model.*, megabytes), which is "
        "expected: load it on top of its base model (PeftModel.from_pretrained(base_model, folder)), or merge it into "
        "the base for a standalone model (merge_and_unload(), then save_pretrained); a run meant to train all weights "
        "that saved only this was a LoRA run by its settings.",
    COMPLETION_SHAPE:
        "Meanwhile: trl hands a reward function its completions in the prompts' format: plain strings for plain-text "
        "prompts, and for conversational prompts (a list of role/content messages) each completion as a list of "
        "messages, `[{\"role\": \"assistant\", \"content\": ...}]`; read `completion[0][\"content\"]` there, or give "
        "the dataset string prompts (a chat template applied beforehand) if the function expects strings.",
    EMPTY_LABELS:
        "Meanwhile: a loss of 0 beside a NaN gradient norm from the first steps is a batch with no supervised token "
        f"(every label masked to -100), not an overflow: {NO_LABEL_CAUSES}; {NO_LABEL_CHECK}.",
    NO_STOP:
        "Meanwhile: a model that runs on past its answer never learned to emit its end-of-turn token: check that each "
        "training example ends with the template's end token in the labels (appended, not masked), and that the pad "
        "token is another token than eos (a language-modelling collator masks every pad id in the labels, so pad == "
        "eos masks the stop token too: trl's setup_chat_format and `tokenizer.pad_token = tokenizer.eos_token` do "
        "that); at inference, stop on the template's end token.",
    AUTO_UNFILLED:
        "Meanwhile: only transformers' Trainer (and accelerate before 1.0, under ZeRO-3) replaces \"auto\" with numbers; "
        "a script that calls deepspeed.initialize or accelerator.prepare itself hands the placeholders to DeepSpeed. "
        "Write numbers for every \"auto\" value of the DeepSpeed JSON (train_batch_size = micro-batch x gradient "
        "accumulation x GPUs, gradient_clipping, the ZeRO bucket sizes), or pin the release the script worked with.",
    SERVER_POLL:
        "Meanwhile: the trainer is in vLLM server mode and waits for a server: start it first on GPUs the trainer does "
        "not use (`trl vllm-serve --model <model>`; ms-swift: `swift rollout --model <model>`) and check that "
        "`curl http://<host>:<port>/health/` answers from the training node, or generate in the training processes "
        "instead (trl vllm_mode=\"colocate\"; Unsloth: load the model with fast_inference=True).",
}

# a start that hangs where a vLLM engine runs in the training processes: the engine isolated, then added back
# (fixtures/devlogs29/3441: a downgrade, then tensor parallelism 1 and no sleep mode; devlogs67/7004 and devlogs36/3925:
# the engines' tensor parallelism and memory share; devlogs60/6313: the vLLM release the trainer supports)
MEANWHILE_VLLM_START = ("Meanwhile: `py-spy dump --pid PID` of each rank while it is stuck shows whether it waits in the "
                        "engine; install the vLLM release the trainer's release supports, and bring the run up once "
                        "with the engine's tensor parallelism at 1 and without sleep mode or offload (on a small model "
                        "if the large one does not fit so) before adding each back.")

# the usual causes for a run that samples no completions (SFT, DPO, pre-training): no rollout engine to blame
# the lines show start-up done: DeepSpeed's config print per rank ("world_size = 4"), ZeRO-3's model built, a trainer's
# parameter count or its "Running training" banner, the shards loaded
SET_UP_DONE = lazyre.compile(r"\bworld_size\s*=\s*\d+|finished initializing model|\btrainable params\b|Fine-tuning method:|"
                             r"\*{5} Running training \*{5}|Loading checkpoint shards:\s*100%")
# the usual causes of a stop once the processes formed their group and built the model (the first step's collectives)
AFTER_SET_UP = ("Meanwhile: the lines show start-up done (the processes formed their group and built the model), so the "
                "stop is at the first steps, not in start-up: the usual cause there is ranks that issue different "
                "collectives: a mixture-of-experts model under ZeRO-3 (each rank gathers only the experts its tokens "
                "reach unless the MoE block is a ZeRO-3 leaf module: deepspeed.utils.set_z3_leaf_modules, which "
                "frameworks apply to the MoE blocks they know), a rank whose batch or generation differs in length, or "
                "a first evaluation or save; `py-spy dump --pid PID` of every rank shows where each one waits.")

MEANWHILE_UNSCORED = {
    "output-degenerate": "Meanwhile, in a run without rollouts: generate with the chat template and end-of-turn token "
                         "the model was trained with (the tokenizer's eos_token among the stop tokens; a base model "
                         "needs its training samples to end with it), add a repetition penalty or sample instead of "
                         "greedy decoding, and compare a checkpoint from an earlier epoch: if it does not loop, the "
                         "later epochs overfit (lower the learning rate or the epochs).",
    "gpu-underutilized": "Meanwhile, where idle GPUs wait in a run without rollouts: on the CPU (data loading, "
                         "tokenising, image decoding: the dataloader workers; `top` shows it busy while the GPUs sit at "
                         "0%), on tiny batches (a batch of 1 with long gradient accumulation), on a mixture-of-experts "
                         "model whose eager implementation runs its experts one after another, or on ZeRO-3 or CPU "
                         "offload traffic.",
    "slow-training": "Meanwhile, where a step's time goes in a run without rollouts: data loading on the CPU (too few "
                     "dataloader workers, images decoded per step), gradient checkpointing and ZeRO-3 or CPU offload "
                     "(each trades speed for memory), a mixture-of-experts model's eager expert loop, and evaluation "
                     "or saving too often; the progress bar's seconds per step before and after one change tell which.",
}

# a run that trains nothing, said in words: a merge, an export, inference or serving, with no word of training
NO_TRAINING_SAID = lazyre.compile(r"(?i)\b(?:merg(?:e|es|ed|ing)|export(?:s|ed|ing)?|inference|infer|deploy(?:ing)?|"
                                  r"serv(?:e|es|ing)|save_pretrained_merged|merge_and_unload)\b|合并|导出|推理|部署")
TRAINING_SAID = lazyre.compile(r"(?i)\btrain(?:s|ed|ing|er)?\b|\bfine-?tun\w*|\b(?:sft|grpo|dpo|ppo|rlhf)\b|训练|微调")
# the levers of a run that does not train: the training ones (batch, accumulation, checkpointing) do not apply
MEANWHILE_NO_TRAINING = {
    "cuda-oom": "Meanwhile, for a run that does not train (inference, serving, a merge or an export): load the model in "
                "half precision or quantized, spread it over the GPUs or onto the CPU (device_map='auto', max_memory), "
                "merge adapters on the CPU, and keep generation's batch and lengths small; a training run's levers "
                "(batch, accumulation, checkpointing) do not apply to it.",
}

# the paste says nothing of a timeout: the failure is the communicator's own, not a wait that ran out
TIMEOUT_SAID = lazyre.compile(r"(?i)\btime(?:d)?[ -]?out\b|\btimeout\b|\bwatchdog\b|超时")
MEANWHILE_NO_TIMEOUT = {
    "nccl-timeout": "Meanwhile: rerun with NCCL_DEBUG=INFO (and TORCH_DISTRIBUTED_DEBUG=DETAIL) on every rank: the "
                    "lines before the failure name the call, the transport (P2P, shared memory, the network "
                    "interface) and the peer it failed with; a failure only with several GPUs or nodes points at that "
                    "transport (NCCL_P2P_DISABLE=1, NCCL_SOCKET_IFNAME set to the interface the ranks share).",
}

def without_lead_in(meanwhile: str) -> str:
    """A MEANWHILE text without its "Meanwhile" lead-in, for where it is not said beside another fix."""
    return meanwhile.removeprefix("Meanwhile: ").removeprefix("Meanwhile, ")


MEANWHILE = {
    "argument-error-other": "Meanwhile: compare the flags with the installed program's own help output (a flag of "
                            "another release, or a misspelling), and check how the launcher splits them: a list item "
                            "of a YAML, compose or Kubernetes command that holds an option and its value with a space "
                            "between reaches the program as one argument (join them with '=', or give one item per "
                            "word).",
    # no release named in the paste: the placeholder stays, with where its values are read
    "import-or-dependency-error": "Meanwhile: install the release that worked (the one the description names, or the "
                                  "one before the one it names as breaking; else what `pip show <package>` prints in "
                                  "a setup that worked) with `pip install '<package>==<version>'`, and compare `pip "
                                  "show` of the packages around it (transformers, accelerate, trl, peft, torch) with "
                                  "that setup.",
    "grad-norm-zero": "Meanwhile: if the reward varies while grad_norm is exactly 0, no parameter received a gradient: "
                      "check the trainable parameter count the run prints (`trainable params`), and with LoRA that "
                      "its target modules match the model's layers.",
    # the usual causes of each symptom, for a description with no log line to compute a fix from
    "gpu-underutilized": "Meanwhile: `top` beside `nvidia-smi dmon -s u` tells a busy CPU from a waiting GPU; for "
                         "generation, use a vLLM engine, give it a larger memory share and batch (its "
                         "gpu_memory_utilization and max_num_seqs) and the smallest tensor parallelism the model fits "
                         "in, and bound the completion length.",
    "cuda-oom": "Meanwhile, the levers in the order they free GPU memory for training: a smaller per-device batch "
                "(in GRPO, fewer completions per device) with more gradient accumulation, gradient checkpointing, a "
                "shorter maximum length or completion length, LoRA instead of full fine-tuning, DeepSpeed ZeRO-2/3 "
                "or offload; with a vLLM engine on the same GPU, a smaller memory share for it.",
    "host-oom-killed": "Meanwhile: watch `free -g` while it runs and read `dmesg -T | grep -i kill` after: the kernel "
                       "names the process it killed and its memory then.",
    "vllm-oom-or-kv-cache": "Meanwhile: vLLM's max_model_len down to prompt + completion, its memory share "
                            "(gpu_memory_utilization) down when it shares the GPU with training or up when it has the "
                            "GPU alone, and tensor parallelism for a model whose weights nearly fill one GPU.",
    "hang-at-start": "Meanwhile: NCCL_DEBUG=INFO and `py-spy dump --pid PID` of each process while it is stuck show "
                     "which of these holds it.",
    "hang-mid-training": "Meanwhile: `py-spy dump --pid PID` of every rank while it is stuck shows which of these "
                         "holds it, and each rank's own log its first error.",
    "nccl-timeout": "Meanwhile: search each rank's own log for its first error before the timeout (Traceback, out of "
                    "memory, Killed); if no rank failed, a longer timeout (ddp_timeout, or the framework's NCCL "
                    "timeout) shows whether the slow step ends.",
    "loss-nan-or-inf": "Meanwhile: find the first row where loss or grad_norm jumps; a lower learning rate, bf16 "
                       "instead of fp16 (fp16 overflows), and gradient clipping (max_grad_norm 1.0) are the usual "
                       "cures.",
    "reward-zero-or-flat": "Meanwhile: print a few completions beside their rewards, call each reward function on "
                           "them by hand, and read reward_std and frac_reward_zero_std in the logged steps: they show "
                           "whether the rewards differ within a prompt's group.",
    "output-degenerate": "Meanwhile: render one prompt as the run builds it and compare it with the model's own chat "
                         "template (use that template and its end-of-turn token), compare the sampling settings with "
                         "the model card's, and read the KL over the logged steps: if it rises before the output "
                         "degrades, the policy drifted: lower the learning rate or raise the KL weight (beta), and "
                         "resume from a checkpoint saved before the rise.",
    "slow-training": "Meanwhile: change one of these at a time; the progress bar's seconds per step before and after "
                     "each change tell which it is.",
    "checkpoint-bloat": "Meanwhile: a full checkpoint holds the optimizer state besides the weights (Adam's two "
                        "fp32 moments are about four times bf16 weights) and, under ZeRO, one shard of it per rank; "
                        "saving the model only (the save_only_model setting of ms-swift and transformers) "
                        "and a limit on kept checkpoints (save_total_limit) keep the folder to the weights; weights "
                        "larger than the original model are most often saved in float32 (4 bytes a parameter, a full "
                        "fine-tune's master weights): load them in bfloat16 and save again.",
    "checkpoint-corrupt": "Meanwhile: `ls -l` the checkpoint folder. A weights file of a few hundred bytes holds an empty "
                          "state dict: under ZeRO-3 the partitioned weights must be gathered to be saved "
                          "(stage3_gather_16bit_weights_on_model_save true, or DeepSpeed's zero_to_fp32.py over the "
                          "checkpoint folder), and an adapter saved from a model that was not wrapped with its LoRA layers "
                          "holds nothing. A file smaller than its siblings was cut short (a save killed mid-write, a full "
                          "disk): load the checkpoint saved before it.",
    "dataset-or-template-error": "Meanwhile: load the dataset alone and print its first row's keys; compare them with "
                                 "the format the trainer and its template expect (messages or prompt, chosen and "
                                 "rejected, images).",
    # the checks each category's trainers and libraries make, said as the values to compare (dev-logs' labels)
    "batch-divisibility": "Meanwhile: the generation batch (per-device batch x processes x gradient accumulation, or "
                          "generation_batch_size where the trainer has it) must be a multiple of num_generations; "
                          "`grpo-doctor preflight -- <launch command>` computes values that divide.",
    "eval-batch-divisibility": "Meanwhile: the evaluation batch (per_device_eval_batch_size x processes) must be a "
                               "multiple of num_generations and the evaluation set must hold at least one such batch; "
                               "or turn evaluation off (eval_strategy \"no\") until it does.",
    "checkpoint-adapter-only-load-args": "Meanwhile: a LoRA run's checkpoint holds the adapter only (adapter_model."
                                         "safetensors and adapter_config.json): load it over its base model (peft's "
                                         "PeftModel.from_pretrained, ms-swift's adapters argument) or merge it into the base "
                                         "first; a run that reads an earlier checkpoint's args.json takes that run's "
                                         "tuner setting, so pass the tuner type you want explicitly.",
    "deepspeed-config-error": "Meanwhile: run once with the next lower ZeRO stage (3 to 2) and no offload: a failure "
                              "that goes away belongs to that stage (ZeRO-3 partitions the parameters, which model, "
                              "save and generation code most often trips on); and set train_batch_size, the micro "
                              "batch and gradient accumulation to \"auto\" in the DeepSpeed JSON, so that the trainer "
                              "fills them in from its own arguments (DeepSpeed checks that the first is the product of "
                              "the other two and the world size).",
    "device-mismatch": "Meanwhile: a model spread over several GPUs (device_map=\"auto\") gets its inputs on another "
                       "GPU than the layer that reads them; one process per GPU (device_map={\"\": local rank}, or "
                       "none under a launcher) or CUDA_VISIBLE_DEVICES set to one GPU keeps the model and the batch "
                       "on one device.",
    "disk-full": "Meanwhile: `df -h` on the output folder, the caches (HF_HOME, TMPDIR, /dev/shm) and Ray's /tmp/ray "
                 "shows which filled; keep fewer checkpoints (save_total_limit), save the model without its optimizer "
                 "state (save_only_model), and point the caches at a larger disk.",
    "multimodal-image-error": "Meanwhile: open the failing sample's images with PIL from where the run starts (paths, "
                              "format, mode), and compare the image tokens in the text with the count the processor "
                              "makes: a maximum length that cuts through the image tokens, or a resolution setting "
                              "(max_pixels) the processor does not apply, makes them differ.",
    "reward-function-error": "Meanwhile: call the reward function by hand on a few completions as the trainer passes "
                             "them (a list of strings or of message lists, each dataset column as a keyword argument): "
                             "it must return one float, or None, per completion.",
    "vllm-engine-error": "Meanwhile: start the same model with the installed vLLM alone (`vllm serve <model>` with the "
                         "run's settings): failing there too, the cause is the vLLM, model and torch combination, not "
                         "the trainer; the engine process's first ERROR line names it.",
    "vllm-version-incompatible": "Meanwhile: install the vLLM release the trainer's release documents (its "
                                 "requirements or its vllm extra) with the torch that vLLM release pins; `pip show "
                                 "vllm torch` beside the trainer's version shows what is installed now.",
}
