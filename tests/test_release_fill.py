"""A release to install is said with the version the run shows (the version the log printed, or the package and
release a sentence names as the one that worked); the placeholder stays only when nothing is known, with where to read
it."""
from __future__ import annotations

from doctor.analyze import analyze
from doctor.claim_facts import RunFacts
from doctor.claims import check_sentence
from doctor.release_fill import fill_release, fill_versions, release_said

TRITON = ("ERROR 04-13 10:01:02 [config.py:32] Failed to import Triton kernels. Please make sure your triton version is "
          "compatible. Error: module 'triton.language' has no attribute 'constexpr_function'")


def _fix_lines(tmp_path, text: str, rule: str) -> list[str]:
    (tmp_path / "log.txt").write_text(text, encoding="utf-8")
    report = analyze([str(tmp_path / "log.txt")])
    return [line for f in report.findings if f.rule_id == rule for line in f.fix]


def test_a_sentence_that_names_the_release_that_worked():
    assert release_said(["Peft版本降低至0.6.0后问题解决，但loss只能降到1左右"]) == "peft==0.6.0"
    assert release_said(["将peft降级到0.6.0就好了"]) == "peft==0.6.0"
    assert release_said(["Downgrading transformers to 4.52.4 fixes it."]) == "transformers==4.52.4"
    assert release_said(["I use peft 0.7.0 and the loss is 0"]) is None   # no change that worked
    assert release_said(["mypeft==0.6.0 works"]) is None                    # not the package


def test_the_placeholder_is_filled_or_says_where_to_read_it():
    assert fill_release("run `pip install vllm==<version>` now", "vllm", "0.19.0") == "run `pip install vllm==0.19.0` now"
    assert fill_release("run `pip install vllm==<version>` now", "vllm", None) == (
        "run `pip install vllm==<version>` (<version>: the version `pip show vllm` prints) now")
    assert fill_versions("pip install torch==<version> and vllm==<version>", {"vllm": "0.11.0"}) == (
        "pip install torch==<version> (<version>: the version `pip show torch` prints) and vllm==0.11.0")
    assert fill_versions("pip install '<package>==<version>'", {}) == "pip install '<package>==<version>'"


def test_gd912_reinstalls_the_vllm_release_the_log_shows(tmp_path):
    fix = _fix_lines(tmp_path, "Environment:\n   - vllm 0.19.0+cu130\n   - triton 3.6.0\n" + TRITON + "\n", "GD912")
    assert any("`pip install vllm==0.19.0`" in line for line in fix)
    assert not any("<version>" in line for line in fix)


def test_gd912_without_a_version_says_where_to_read_it(tmp_path):
    fix = _fix_lines(tmp_path, TRITON + "\n", "GD912")
    assert any("`pip install vllm==<version>` (<version>: the version `pip show vllm` prints)" in line for line in fix)


def test_a_reinstall_of_the_installed_release_is_no_contradicted_version_claim():
    facts = RunFacts(versions={"vllm": "0.19.0"})
    kept = "Reinstall vLLM into a clean environment with `pip install vllm==0.19.0`."
    assert check_sentence(kept, facts)[0] == kept
    assert check_sentence("Install it: `pip install vllm==0.19.0`.", facts)[0] is None   # the installed one, no change


def test_a_description_that_names_the_release_that_worked_fills_the_install(tmp_path):
    text = ("ChatGLM3 LoRA fine-tuning: loss is 0 on 4 GPUs\n"
            "学校服务器cuda版本为11.7，因此我安装的torch版本是cu118+torch2.1.2。是否可能由于torch版本与实际cuda版本不匹配导致loss为0？\n"
            "\n"
            "Peft版本降低至0.6.0后问题解决，但loss只能降到1左右。\n")
    fix = _fix_lines(tmp_path, text, "GD327")
    assert any("`pip install 'peft==0.6.0'`" in line for line in fix), fix
    assert not any("<version>" in line for line in fix)


def test_a_release_named_as_people_say_it_is_pinned_as_pip_installs_it():
    from doctor.release_fill import release_changed
    # devlogs26/3504: "pytorch" is torch to pip; devlogs62/6609: a dev build keeps its suffix
    assert release_changed("Then I pinned pytorch version to 2.1.2 and it works for me.") == "torch==2.1.2"
    assert release_changed("I found that the transformers==4.49.0.dev0 now have solved this confict.") == \
        "transformers==4.49.0.dev0"
    # the change that solved it, in Chinese, with 替换成
    assert release_changed("感谢!   transformers替换成4.30.1就正常了") == "transformers==4.30.1"
