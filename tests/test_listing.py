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
