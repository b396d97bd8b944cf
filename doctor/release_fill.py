"""A release to install, said with its version when the run shows one: the version the log printed for a package
(``RunConfig.versions``: an environment list, a banner, a pip line), or the package and release a sentence of the paste
names as the one that worked ("downgrading peft to 0.6.0 solved it", "Peft版本降低至0.6.0后问题解决"). A fix line keeps the
``<version>`` placeholder only when neither is known, and then says where to read it."""
from __future__ import annotations

from . import lazyre

HOLE = "<version>"
_PINNED_HOLE = lazyre.compile(r"(?<![\w.<-])([A-Za-z][\w.-]*)==<version>")

# the packages a training paste names as what it installed (their pip names, and the import name where it differs)
PACKAGES = (r"transformers|trl|peft|accelerate|deepspeed|vllm|torch|pytorch|datasets|tokenizers|bitsandbytes|"
            r"flash[-_]attn|xformers|triton|ms[-_]swift|unsloth|unsloth[-_]zoo|verl|openrlhf|llamafactory|axolotl|"
            r"safetensors|numpy|pydantic|protobuf|sentencepiece|liger[-_]kernel|megatron[-_]core")
_VERSION = r"v?(?P<ver>\d+\.\d+(?:\.\d+)?(?:\.?post\d+|rc\d+|\.?dev\d+)?)"
# a change of the package's release: to a version, with a verb of change before it ("downgrade peft to 0.6.0",
# "reverted transformers back to 4.52.4", "peft版本降低至0.6.0", "将peft降级到0.6.0", "transformers替换成4.30.1",
# "pip install peft==0.6.0")
_CHANGED = lazyre.compile(
    r"(?i)(?<![A-Za-z0-9_.-])(?P<pkg>" + PACKAGES + r")(?![A-Za-z0-9_-])\s*(?:==\s*" + _VERSION.replace("ver", "v1") + r"|"
    r"(?:版本|version)?\s*(?:替换|降低|降级|降|回退|退回|改|换|升级|升)\w{0,2}?(?:至|到|为|成)\s*" + _VERSION.replace("ver", "v2") + r")|"
    r"\b(?:downgrad|revert|roll(?:ed|ing)? back|pinn?|install|upgrad|switch)\w*\s+(?:the\s+)?(?P<pkg3>" + PACKAGES
    + r")(?![A-Za-z0-9_-])\s+(?:version\s+)?(?:back\s+)?(?:to\s+)?" + _VERSION.replace("ver", "v3"))
# ... in a sentence that says it then worked
_WORKED = lazyre.compile(r"(?i)\b(?:solved?|fix(?:es|ed)?|works?|worked|working|resolved?|fine|normal(?:ly)?|gone)\b|"
                         r"解决|正常|好了|就好|可以了|没问题")


def release_changed(text: str) -> str | None:
    """``pkg==version`` of the release a sentence moves a package to, or None."""
    m = _CHANGED.search(text)
    if m is None:
        return None
    return f"{canonical(m.group('pkg') or m.group('pkg3'))}=={m.group('v1') or m.group('v2') or m.group('v3')}"


_NAMES = {"pytorch": "torch", "flash_attn": "flash-attn", "unsloth_zoo": "unsloth-zoo", "liger_kernel": "liger-kernel",
          "megatron_core": "megatron-core", "ms_swift": "ms-swift", "swift": "ms-swift"}


def canonical(pkg: str) -> str:
    """The name pip installs a package under (pytorch is what people call torch; swift, in a version report, is
    ms-swift)."""
    pkg = pkg.lower()
    return _NAMES.get(pkg, pkg)


def release_said(texts: list[str]) -> str | None:
    """``pkg==version`` of the release a sentence names as the one that made the run work, or None."""
    return next((spec for t in texts if (spec := release_changed(t)) is not None and _WORKED.search(t)), None)


def fill_release(line: str, package: str, version: str | None) -> str:
    """``line`` with ``package==<version>`` filled from the version the run shows; unknown: the placeholder kept, with
    where to read it."""
    hole = f"{package}=={HOLE}"
    if hole not in line:
        return line
    if version:
        return line.replace(hole, f"{package}=={version}")
    at = line.index(hole) + len(hole)
    if line.count("`", 0, at) % 2:   # inside a command in backticks: said after it
        at = line.find("`", at) + 1 or len(line)
    return f"{line[:at]} (<version>: the version `pip show {package}` prints){line[at:]}"


def fill_versions(line: str, versions: dict[str, str]) -> str:
    """``fill_release`` of every ``package==<version>`` of ``line``, from the versions the run printed."""
    if HOLE not in line:
        return line
    for pkg in dict.fromkeys(m.group(1) for m in _PINNED_HOLE.finditer(line)):
        line = fill_release(line, pkg, versions.get(pkg))
    return line
