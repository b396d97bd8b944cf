"""GD440: an image or video of the dataset could not be loaded (missing, truncated, odd aspect, undecodable)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def image_load_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    f = g.get("file")
    text = hits[0].evidence.text
    if g.get("ratio"):
        return Diagnosis(
            message=f"An image has an aspect ratio of {g['ratio']} (qwen_vl_utils refuses more than "
                    f"{g.get('maxr') or 200}): a thin strip or a broken file.",
            fix=("Drop or pad such images in the dataset (width/height and height/width both under 200).",))
    if g.get("small"):
        return Diagnosis(
            message="An image is smaller than one vision patch (qwen_vl_utils smart_resize refuses it).",
            fix=("Drop or upscale images under 28 pixels on a side; check for empty or corrupt files.",))
    if "truncated" in text:
        return Diagnosis(
            message="An image file is truncated (an incomplete download or copy).",
            fix=("Re-download or remove the file; find it by opening every image with PIL before training.",))
    if "DECORD" in text.upper() or g.get("video"):
        return Diagnosis(
            message="A video could not be decoded.",
            fix=("Check the video file (ffprobe <file>) and the decord/av install; remove unreadable videos.",))
    if "No such file" in text:
        return Diagnosis(
            message=f"The image or video {f or ''} does not exist at the path written in the dataset.",
            fix=("Relative paths are resolved from the directory you launch swift in; use absolute paths, "
                 "or set ROOT_IMAGE_DIR to the folder the relative paths start from.",
                 "Check that every node of a multi-node run sees the same files."))
    return Diagnosis(
        message=f"PIL cannot read {f or 'an image'}: the file is not an image, is empty or corrupt, or is in a "
                f"format PIL does not know (e.g. HEIC, AVIF without plugins).",
        fix=("Open every image of the dataset with PIL before training and drop or re-encode the ones that fail "
             "(e.g. convert to JPEG/PNG).",
             "If the path points to an HTML error page from a failed download, re-download it."))
