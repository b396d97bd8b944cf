"""The command-line programs of the training stack: which package installs each one (a console-script entry point of
its wheel) and how to run the same program without it through the interpreter, for a shell that cannot find it.

Read from each package's metadata and source:
- ``swift``: ms-swift's ``entry_points.txt`` (``swift = swift.cli.main:cli_main``, 4.6.0); ``swift/cli/main.py`` ends in
  ``if __name__ == '__main__': cli_main()`` and routes ``pt, sft, infer, merge-lora, web-ui, deploy, rollout, rlhf,
  sample, export, eval, app`` (ROUTE_MAPPING), so ``python -m swift.cli.main rlhf ...`` is the same launch;
- ``torchrun``: torch's ``torchrun = torch.distributed.run:main``; ``python -m torch.distributed.run`` (torch docs);
- ``accelerate``: ``accelerate = accelerate.commands.accelerate_cli:main``, a module with its own ``__main__``
  (``python -m accelerate.commands.accelerate_cli launch ...``; accelerate 1.x);
- ``llamafactory-cli`` / ``lmf``: LLaMA-Factory's ``setup.py`` console scripts (``llamafactory.cli:main``), installed by
  ``pip install -e ".[torch,metrics]"`` in its checkout (its README's installation step);
- ``trl``: ``trl = trl.cli:main`` and ``trl/cli/main.py`` with its own ``__main__`` (trl 0.29.1);
- ``deepspeed``, ``vllm``: the launcher scripts of those packages (no module form checked here).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EntryPoint:
    package: str          # the distribution that installs the command
    install: str          # how to install it (the project's documented step)
    module: str = ""      # `python -m <module>` runs the same program ('' when none was checked)


ENTRY_POINTS: dict[str, EntryPoint] = {
    "swift": EntryPoint("ms-swift", "pip install ms-swift (or pip install -e . in its checkout)", "swift.cli.main"),
    "megatron": EntryPoint("ms-swift", "pip install ms-swift (or pip install -e . in its checkout)"),
    "torchrun": EntryPoint("torch", "pip install torch (the build for your CUDA)", "torch.distributed.run"),
    "accelerate": EntryPoint("accelerate", "pip install accelerate", "accelerate.commands.accelerate_cli"),
    "llamafactory-cli": EntryPoint("LLaMA-Factory", 'pip install -e ".[torch,metrics]" in the LLaMA-Factory checkout'),
    "lmf": EntryPoint("LLaMA-Factory", 'pip install -e ".[torch,metrics]" in the LLaMA-Factory checkout'),
    "deepspeed": EntryPoint("deepspeed", "pip install deepspeed"),
    "vllm": EntryPoint("vllm", "pip install vllm"),
    "trl": EntryPoint("trl", "pip install trl", "trl.cli.main"),
}

# ms-swift's subcommands (swift/cli/main.py ROUTE_MAPPING, 4.6.0): typed alone, they are a missing `swift `
SWIFT_SUBCOMMANDS = frozenset({"pt", "sft", "infer", "merge-lora", "web-ui", "deploy", "rollout", "rlhf", "sample",
                               "export", "eval", "app"})
