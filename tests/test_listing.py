"""The pasted-listing reader (doctor/sources/listing.py): sizes as ls, du and hand-made tables print them."""
from doctor.sources.listing import blocks, parse_line, size_bytes


def test_sizes_as_printed():
    assert size_bytes("15013097353") == 15013097353
    assert size_bytes("36 981 387 757") == 36981387757
    assert size_bytes("1,234,567") == 1234567
    assert size_bytes("15G") == 15 * 1024 ** 3
    assert size_bytes("1.5MiB") == 1572864  # 1.5 * 1048576
    assert size_bytes("4.0K") == 4096
    assert size_bytes("big") is None


def test_ls_row_any_locale_date_and_type_suffix():
    e = parse_line("-rwxrw-r-- 1 hope hope       23607 9月  19 14:46 zero_to_fp32.py*", 7)
    assert (e.name, e.size, e.is_dir, e.line, e.form) == ("zero_to_fp32.py", 23607, False, 7, "ls")
    d = parse_line("drwxrwxr-x 2 hope hope        4096 Sep 17 09:37 global_step625/", 3)
    assert (d.name, d.size, d.is_dir) == ("global_step625", None, True)  # a folder's 4096 is its inode, not its content
    h = parse_line("-rw-r--r-- 1 u g 3.1G 2024-09-19 14:43 model-00001-of-00002.safetensors", 1)
    assert (h.name, h.size, h.printed) == ("model-00001-of-00002.safetensors", int(3.1 * 1024 ** 3), "3.1G")
    assert parse_line("drwxr-xr-x 3 u g 4096 Sep 19 14:43 ./", 1) is None


def test_du_rows_need_a_checkpoint_name():
    e = parse_line("29G\toutput/v0-20250101/checkpoint-200", 2)
    assert (e.name, e.size, e.is_dir, e.form) == ("checkpoint-200", 29 * 1024 ** 3, True, "du")
    assert parse_line("12K\tsrc/utils", 1) is None  # a du row of something that is not a checkpoint
    assert parse_line("3 apples", 1) is None


def test_blocks_allow_one_gap_and_need_two_rows():
    lines = [(1, "15G checkpoint-100"), (2, ""), (3, "29G checkpoint-200"), (4, "some prose"), (5, "words again"),
             (6, "43G checkpoint-300")]
    found = blocks(lines)
    assert [[e.name for e in b] for b in found] == [["checkpoint-100", "checkpoint-200"]]  # row 6 alone is no block


def test_tree_rows_with_sizes():
    # tree(1) -h (and --du): "[size]" between the branch drawing and the name
    e = parse_line("├── [ 15G]  checkpoint-100", 4)
    assert (e.name, e.size, e.is_dir, e.form) == ("checkpoint-100", 15 * 1024 ** 3, True, "tree")
    f = parse_line("│   ├── [3.1G]  model-00001-of-00002.safetensors", 5)
    assert (f.name, f.size, f.is_dir) == ("model-00001-of-00002.safetensors", int(3.1 * 1024 ** 3), False)
    assert parse_line("|-- [ 29G]  checkpoint-200/", 6).name == "checkpoint-200"


def test_windows_dir_eza_and_hand_written_rows():
    e = parse_line("11/28/2024  01:02 PM    15,013,097,353 model.safetensors", 4)
    assert (e.name, e.size, e.is_dir, e.form) == ("model.safetensors", 15013097353, False, "dir")
    assert parse_line("28.11.2024  13:02    <DIR>          global_step300", 1).is_dir
    assert parse_line("11/28/2024  01:02 PM    <DIR>          .", 1) is None
    z = parse_line(".rw-r--r-- 1.1k root 28 Nov 13:02 scheduler.pt", 2)
    assert (z.name, z.size, z.form) == ("scheduler.pt", int(1.1 * 1024), "eza")  # eza prints a lowercase k
    d = parse_line("drwxr-xr-x    - root 28 Nov 13:02 global_step300", 3)
    assert (d.name, d.size, d.is_dir) == ("global_step300", None, True)
    c = parse_line("checkpoint-300: 43 GB", 5)
    assert (c.name, c.size, c.form) == ("checkpoint-300", 43 * 1024 ** 3, "colon")
    assert parse_line("Note: 3 GB", 1) is None  # a "name: size" line of something that is not a checkpoint


def test_tree_rows_without_sizes_keep_the_names():
    rows = blocks([(1, "checkpoint-300"), (2, "├── config.json"), (3, "├── global_step300"),
                   (4, "│   └── bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"),
                   (5, "└── model-00001-of-00004.safetensors")])[0]
    assert [(e.name, e.size, e.is_dir) for e in rows] == [
        ("config.json", None, False), ("global_step300", None, True),
        ("bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt", None, False),
        ("model-00001-of-00004.safetensors", None, False)]


def test_names_only_listing_judged_by_what_the_checkpoint_holds():
    from doctor.checks.checkpoint.listing import judge
    tree = [(1, "├── global_step300"), (2, "│   └── bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"),
            (3, "├── model-00001-of-00004.safetensors"), (4, "└── zero_to_fp32.py")]
    msg, fix, ev = judge(blocks(tree)[0], "t.log")
    assert "optimizer states" in msg and "no sizes" in msg and any("save_only_model" in f for f in fix)
    lora = [(1, "├── adapter_config.json"), (2, "├── adapter_model.safetensors"), (3, "└── model.safetensors")]
    assert "beside the LoRA adapter" in judge(blocks(lora)[0], "t.log")[0]
    # a source tree is no checkpoint: nothing to say
    src = [(1, "├── README.md"), (2, "├── src"), (3, "│   └── train.py"), (4, "└── setup.py")]
    assert judge(blocks(src)[0], "t.log") is None


def test_deepspeed_module_and_optimizer_state_files_in_a_du_listing():
    from doctor.checks.checkpoint.listing import judge
    du = [(1, "90G\tbf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"), (2, "15G\tmp_rank_00_model_states.pt")]
    msg, fix, ev = judge(blocks(du)[0], "t.log")
    # 90G / 15G = 6.0, as the listing prints them
    assert "full model weights (15G) and optimizer states 90G (6.0x the weights)" in msg
    assert fix[0].startswith("save_only_model")


def test_aws_s3_ls_rows_and_a_typed_table_of_checkpoint_folders():
    # awscli `aws s3 ls --recursive`: date, time, bytes, key
    e = parse_line("2025-03-01 10:00:00 30462466048 run1/checkpoint-100/optimizer.pt", 4)
    assert (e.name, e.size, e.is_dir, e.form) == ("optimizer.pt", 30462466048, False, "s3")
    assert parse_line("2025-03-01 10:00:00 1234 notes/readme.txt", 1) is None  # no checkpoint file
    # "checkpoint-300   43G": a folder's name then its size, aligned
    e = parse_line("output/checkpoint-300   43G", 2)
    assert (e.name, e.size, e.is_dir) == ("checkpoint-300", 43 << 30, True)
    assert parse_line("checkpoint-300 saved", 1) is None


def test_a_markdown_table_of_checkpoint_folders_and_their_sizes():
    # as pasted (bars kept) and as the paste reader hands it on (bars taken off: one space between the cells)
    assert parse_line("| checkpoint-100 | 15 GB |", 3).size == 15 * (1 << 30)
    assert parse_line("checkpoint-200 43 GB", 4).name == "checkpoint-200"
    # the table's rule row is neither a tree branch nor an entry
    assert parse_line("|---|---|", 2) is None and parse_line("| --- | :---: |", 2) is None
    # a checkpoint name followed by a word is not a size row
    assert parse_line("checkpoint-200 saved", 5) is None
