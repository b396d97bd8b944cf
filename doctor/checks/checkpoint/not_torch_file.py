"""GD807's reading of a weight file that is no torch file at all: torch.load's unpickler stops at the first byte
(CPython Modules/_pickle.c load: "invalid load key, '%c'.", the byte being no pickle opcode), and transformers'
load_state_dict (modeling_utils.py, 4.x) then reads the file's first characters itself: "version" is a git-LFS
pointer ("You seem to have cloned a repository without having git-lfs installed"). The byte tells what the file is:
'v' the pointer's "version https://git-lfs.github.com/spec/v1", '<' an HTML page saved in the file's place (a login
or error page of a download). A cut zip archive keeps the rule's own message."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_KEY = lazyre.compile(r"invalid load key, '(?P<key>.{1,4}?)'")


def torch_file_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    texts = [h.exc.message if h.exc else h.evidence.text for h in hits]
    lfs = any("without having git-lfs installed" in t for t in texts)
    key = next((m.group("key") for t in texts if (m := _KEY.search(t))), None)
    if not lfs and key is None:
        return Diagnosis()
    if lfs or key == "v":
        told = ("is a git-LFS pointer, not the weights (transformers read the file's start and said so)" if lfs else
                "is most likely a git-LFS pointer, not the weights (the unpickler stopped at its first byte, 'v', "
                "the first letter of a pointer)")
        msg = (f"The weight file {told}: a repository cloned without git-lfs "
               f"holds small text files beginning `version https://git-lfs.github.com/spec/v1` in place of each "
               f"large file, and torch.load cannot read them.")
        fix = ("In the cloned model folder run `git lfs install` then `git lfs pull` (the files then have their real "
               "sizes: `ls -l`), or download the model with `huggingface-cli download REPO --local-dir DIR` "
               "(ModelScope: `modelscope download --model REPO --local_dir DIR`), then rerun.",
               "Check a file before loading it: `head -c 100 FILE` shows `version https://git-lfs...` for a pointer.")
        return Diagnosis(message=msg, fix=fix, action="relaunch",
                         title="A weight file is a git-LFS pointer, not the weights")
    if key == "<":
        msg = ("The weight file is an HTML page, not the weights (the unpickler stopped at its first byte, '<'): a "
               "download saved a login, licence or error page in the file's place.")
        fix = ("Download the file again from the model's repository with a client that authenticates "
               "(`huggingface-cli login` then `huggingface-cli download REPO --local-dir DIR`, after accepting a gated "
               "model's licence on its page); `head -c 200 FILE` shows the HTML of the bad copy.",)
        return Diagnosis(message=msg, fix=fix, action="relaunch", title="A weight file is an HTML page, not the weights")
    msg = (f"torch.load could not read the file at all: its first byte ('{key}') starts no torch file (the unpickler "
           f"stopped there), so it is another format under a torch name (a safetensors or GGUF file named .bin/.pt, a "
           f"text file) or its start is damaged.")
    fix = ("Look at the file's start and size (`head -c 64 FILE | xxd`, `ls -l`) against the source's, and copy or "
           "download it again; a safetensors file is loaded with safetensors (or `use_safetensors=True`), not "
           "torch.load.",)
    return Diagnosis(message=msg, fix=fix)
