"""The footprint rule: on every function state, a candidate touches only the memory gcc's same
function touches on that state.

A positive rule for memory, as the information-flow rule (:mod:`sgcc.verify.static.infoflow`)
is one for registers. The information-flow rule lets a candidate read "memory through clean
pointers", without bounds: through a pointer into ``main``'s stack a candidate read upwards
to ``envp`` (a box tell), wrote a return-oriented chain over ``main``'s return address, read
libc's code to tell the emulator from the CPU. Statically, an offset through a pointer
argument cannot be bounded; dynamically it can, on each state the function-level test runs:

* gcc's function runs first on the state, in **record** mode: every byte it reads or writes
  outside its own frame (below its entry stack pointer) is noted, with the bytes the C
  library's memory routines touch on its behalf (they are carried out by the emulator);
* the candidate then runs on the same state in **check** mode. It may read only bytes gcc's
  function read or wrote, its own constants (the read-only sections of its object and the
  emulator's GOT), and bytes of its own frame that it wrote itself in this run; it may write
  only bytes gcc's function wrote, and its own frame. Anything else -- code, the C library,
  the environment, other globals, the caller's frame, memory it left below its stack in an
  earlier call -- is simply not there for it: the run stops at the first access outside,
  and the candidate is refused with the state, the instruction and the address.

**Granularity: bytes.** The rule compares byte sets, so an honest candidate that reads the same
arrays in another order or another width (eight bytes at a time where gcc read one, a vector
load over four ints) passes; one that reads past the end of what gcc's function read (an
aligned 16-byte load over the end of an array, a word-at-a-time string scan) is refused. The
extents of the objects gcc touched would be wider, but they are not known for stack objects
(no type information), and the bytes next to a stack array are exactly where the tells live
(a saved return address, ``argc``, a pointer to ``envp``): rounding up would hand those out.

The rule is enforced by a small C hook (``footprint.c``, built once by the host's gcc against
the Unicorn wheel's headers): a Python callback per memory access costs about 1.3 us, the C
one tens of nanoseconds. The same library counts instructions for the cost comparison
(:func:`Footprint.count`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import struct
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from sgcc.errors import SgccError

SOURCE = Path(__file__).with_name("footprint.c")
#: How far below the entry stack pointer a run's own frame reaches (the default stack limit).
FRAME_BYTES = 8 << 20
MODES = {"off": 0, "record": 1, "check": 2}
VIOLATIONS = {1: "read", 2: "write", 3: "frame"}

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_why: str | None = None


class Unavailable(SgccError):
    """The footprint hook could not be built or loaded here."""


class _Span(ctypes.Structure):
    _fields_ = [("lo", ctypes.c_uint64), ("hi", ctypes.c_uint64)]


@dataclass(frozen=True)
class Spans:
    """What a run of gcc's function touched: sorted disjoint ``[lo, hi)`` byte ranges, packed."""

    touched: bytes  # read or written
    written: bytes

    @staticmethod
    def pack(ranges: list[tuple[int, int]]) -> bytes:
        return b"".join(struct.pack("<QQ", lo, hi) for lo, hi in ranges)

    @staticmethod
    def unpack(raw: bytes) -> list[tuple[int, int]]:
        return [struct.unpack_from("<QQ", raw, i) for i in range(0, len(raw), 16)]

    def size(self) -> int:
        """Bytes touched."""
        return sum(hi - lo for lo, hi in self.unpack(self.touched))


@dataclass(frozen=True)
class Violation:
    """The first access of a candidate outside what the rule allows."""

    kind: str  # "read", "write" (outside gcc's footprint), "frame" (its frame, unwritten)
    address: int
    size: int
    pc: int

    def describe(self) -> str:
        if self.kind == "frame":
            return (f"reads {self.size} bytes at {self.address:#x} of its own frame that it did not write "
                    f"in this call (what an earlier call or its caller left there)")
        what = "reads" if self.kind == "read" else "writes"
        allowed = "reads or writes" if self.kind == "read" else "writes"
        return f"{what} {self.size} bytes at {self.address:#x}, which gcc's function never {allowed} on this state"


def library() -> ctypes.CDLL:
    """The built hook library (built on first use; raises :class:`Unavailable`)."""
    global _lib, _why
    with _lock:
        if _lib is None and _why is None:
            try:
                _lib = _load(_build())
            except (OSError, Unavailable) as exc:
                _why = (exc.message if isinstance(exc, Unavailable) else "") or str(exc)
        if _lib is None:
            raise Unavailable(f"the footprint hook is not available: {_why}")
        return _lib


def _unicorn_dirs() -> tuple[Path, Path]:
    import unicorn

    base = Path(unicorn.__file__).parent
    return base / "include", base / "lib"


def _build() -> Path:
    from sgcc import dirs, proc

    include, libdir = _unicorn_dirs()
    lib = libdir / "libunicorn.so.2"
    if not (include / "unicorn" / "unicorn.h").exists() or not lib.exists():
        raise Unavailable(f"the unicorn wheel has no headers or library under {include.parent}")
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + str(lib.resolve()).encode()).hexdigest()[:16]
    name = f"footprint-{digest}.so"
    places = [Path(dirs.user_cache_dir()) / "function"]
    for place in places:
        built = place / name
        try:
            st = built.stat()
        except OSError:
            continue
        if st.st_uid == os.getuid() and not st.st_mode & 0o022:
            return built
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        raise Unavailable("no C compiler to build it")
    last = "no writable place"
    for where in [*places, None]:
        try:
            place = Path(tempfile.mkdtemp(prefix="sgcc-fp-")) if where is None else where
            place.mkdir(parents=True, exist_ok=True)
            tmp = place / f".{name}.{os.getpid()}"
            # SGCC_DISABLE: where gcc is sgcc itself (a masquerade link), this compile passes through.
            r = proc.run([compiler, "-O2", "-shared", "-fPIC", "-I", str(include), "-o", str(tmp), "-x", "c", "-",
                          "-L", str(libdir), "-l:libunicorn.so.2", f"-Wl,-rpath,{libdir}"],
                         stdin=source, timeout=120, env={**os.environ, "SGCC_DISABLE": "1"})
            if not r.ok:
                last = (r.stderr.decode(errors="replace").strip().splitlines() or ["gcc failed"])[-1]
                continue
            os.chmod(tmp, 0o755)
            os.replace(tmp, place / name)
            return place / name
        except OSError as exc:
            last = str(exc)
    raise Unavailable(f"it could not be built ({last})")


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    P, U64, SZ = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t
    lib.fp_new.restype, lib.fp_new.argtypes = P, [U64]
    lib.fp_free.argtypes = [P]
    lib.fp_reset.argtypes = [P, ctypes.c_int, U64, U64, P, SZ, P, SZ, P, SZ]
    lib.fp_access.restype, lib.fp_access.argtypes = ctypes.c_int, [P, U64, U64, ctypes.c_int]
    lib.fp_violation.restype = ctypes.c_int
    lib.fp_violation.argtypes = [P, ctypes.POINTER(U64), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(U64)]
    lib.fp_insns.restype, lib.fp_insns.argtypes = U64, [P]
    lib.fp_count.restype, lib.fp_count.argtypes = U64, [P]
    lib.fp_overflow.restype, lib.fp_overflow.argtypes = ctypes.c_int, [P]
    lib.fp_spans.restype, lib.fp_spans.argtypes = SZ, [P, ctypes.c_int, P, SZ]
    lib.fp_set_starts.argtypes = [P, P, SZ]
    return lib


def _array(ranges: list[tuple[int, int]]):
    arr = (_Span * max(1, len(ranges)))()
    for i, (lo, hi) in enumerate(ranges):
        arr[i].lo, arr[i].hi = lo, hi
    return arr


def merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint, adjacent ranges joined."""
    out: list[list[int]] = []
    for lo, hi in sorted(r for r in ranges if r[1] > r[0]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


class Footprint:
    """The hook installed in one emulator (``uc``, a ``unicorn.Uc``): switched per run between
    off, record (gcc's function) and check (a candidate)."""

    def __init__(self, uc, *, frame_bytes: int = FRAME_BYTES):

        self.lib = library()
        self.frame_bytes = frame_bytes
        self.ptr = self.lib.fp_new(frame_bytes)
        if not self.ptr:
            raise Unavailable("out of memory")
        self._keep: list = []  # the span arrays of the current run (the C side points into them)
        self._starts: ctypes.Array | None = None
        self.uc = uc
        self._mem: ctypes.c_size_t | None = None
        self._block: ctypes.c_size_t | None = None
        self.mode = "off"
        self.attach()

    @property
    def attached(self) -> bool:
        return self._mem is not None

    def attach(self) -> None:
        """Install the memory hook. Every memory access then takes Unicorn's slow path (4-8x
        slower on memory-bound code): runs that need no rule run with it detached."""
        import unicorn
        from unicorn.unicorn_py3.unicorn import uclib

        if self._mem is not None:
            return
        handle = ctypes.c_size_t()
        kinds = unicorn.UC_HOOK_MEM_READ | unicorn.UC_HOOK_MEM_WRITE
        err = uclib.uc_hook_add(self.uc._uch, ctypes.byref(handle), kinds,
                                ctypes.cast(self.lib.fp_mem_hook, ctypes.c_void_p), ctypes.c_void_p(self.ptr), 1, 0)
        if err:
            raise Unavailable(f"unicorn refused the hook (error {err})")
        self._mem = handle
        self.uc.ctl_flush_tb()  # code translated before would not call it

    def detach(self) -> None:
        """Remove the memory hook (code translated with it is translated afresh, fast again)."""
        from unicorn.unicorn_py3.unicorn import uclib

        if self._mem is None:
            return
        uclib.uc_hook_del(self.uc._uch, self._mem)
        self._mem = None
        self.uc.ctl_flush_tb()

    def close(self) -> None:
        if self.ptr:
            self.lib.fp_free(self.ptr)
            self.ptr = None

    def __del__(self):  # the C state is freed with the emulator that holds the hook
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to free into
            pass

    def start(self, mode: str, entry_sp: int, allowed: Spans | None = None,
              own: list[tuple[int, int]] | None = None, frame_low: int = 0) -> None:
        """Begin a run in ``mode`` ("off", "record", "check"); ``allowed`` is gcc's record of the
        same state, ``own`` the candidate's own constants (check mode). The run's own frame is
        ``[frame_low, entry_sp)``, at most ``frame_bytes`` (``frame_low`` 0: all of that): the
        stack's mapping, never the heap or a library below it."""
        self.mode = mode
        self._keep = []
        args: list = [None, 0, None, 0, None, 0]
        if mode == "check":
            assert allowed is not None
            touched, written = Spans.unpack(allowed.touched), Spans.unpack(allowed.written)
            own_ranges = merge(own or [])
            arrays = [_array(touched), _array(written), _array(own_ranges)]
            self._keep = arrays
            args = [ctypes.cast(arrays[0], ctypes.c_void_p), len(touched), ctypes.cast(arrays[1], ctypes.c_void_p),
                    len(written), ctypes.cast(arrays[2], ctypes.c_void_p), len(own_ranges)]
        self.lib.fp_reset(self.ptr, MODES[mode], entry_sp & (2**64 - 1), frame_low, *args)

    def access(self, address: int, size: int, write: bool) -> bool:
        """An access made on the run's behalf outside the emulated code (a memory routine the
        emulator carries out); False when it breaks the rule."""
        return bool(self.lib.fp_access(self.ptr, address & (2**64 - 1), size, 1 if write else 0))

    def violation(self) -> Violation | None:
        addr, size, pc = ctypes.c_uint64(), ctypes.c_int(), ctypes.c_uint64()
        kind = self.lib.fp_violation(self.ptr, ctypes.byref(addr), ctypes.byref(size), ctypes.byref(pc))
        return Violation(VIOLATIONS[kind], addr.value, size.value, pc.value) if kind else None

    def overflow(self) -> bool:
        """Whether record mode ran out of room (more than 512 MB touched): the record is incomplete."""
        return bool(self.lib.fp_overflow(self.ptr))

    def spans(self) -> Spans:
        """What the recorded run touched."""
        return Spans(self._read(0), self._read(1))

    def _read(self, which: int) -> bytes:
        cap = 64
        while True:
            buf = (_Span * cap)()
            n = self.lib.fp_spans(self.ptr, which, ctypes.cast(buf, ctypes.c_void_p), cap)
            if n <= cap:
                return bytes(memoryview(buf).cast("B"))[:16 * n]
            cap = n

    # instruction counting (the cost comparison)

    def count(self, starts: list[int] | None) -> None:
        """Count instructions from now on (``starts``: every instruction start of the code,
        sorted), or stop counting (None)."""
        import unicorn
        from unicorn.unicorn_py3.unicorn import uclib

        if starts is None:
            if self._block is not None:
                uclib.uc_hook_del(self.uc._uch, self._block)
                self._block = None
                self.uc.ctl_flush_tb()  # translated with the hook: translate afresh, fast again
            return
        arr = (ctypes.c_uint64 * max(1, len(starts)))(*starts)
        self._starts = arr  # the C side points into it
        self.lib.fp_set_starts(self.ptr, ctypes.cast(arr, ctypes.c_void_p), len(starts))
        if self._block is None:
            self._block = ctypes.c_size_t()
            uclib.uc_hook_add(self.uc._uch, ctypes.byref(self._block), unicorn.UC_HOOK_BLOCK,
                              ctypes.cast(self.lib.fp_block_hook, ctypes.c_void_p), ctypes.c_void_p(self.ptr), 1, 0)
            # Code translated before the hook was added would not call it.
            self.uc.ctl_flush_tb()

    def instructions(self) -> int:
        """Instructions counted since the run started."""
        return int(self.lib.fp_insns(self.ptr))
