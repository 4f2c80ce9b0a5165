"""A cache entry: what it holds, how it is signed, read back and checked, what it substitutes.

An entry is code that ships into users' builds, so this is the one module that knows its
shape; everything else (the engine, project mode, the drop-in, ``sgcc cache``) holds an
:class:`Entry` and never a dict.

**What it holds.** One translation unit's verdicts in one context, under its key
(:func:`sgcc.cache.keys.entry_key`: the context and gcc's assembly):

* ``functions``: per function, per *search* (:func:`sgcc.cache.keys.search_key`: the tests,
  the generators' configuration, the minimum gain), a :class:`Verdict`: a winning unit with its
  evidence, or a recorded "nothing proven faster" so that search is not repeated;
* ``applied``: an :class:`Applied`, the units the last search validated *together*, which is
  exactly what a build substitutes (:meth:`Applied.join`), with what ``sgcc cache verify``
  needs to re-prove them (gcc's assembly, the context, the assembler flags);
* ``source``, ``updated``; fields this version does not know are kept as they came (``extra``).

**How it is stored.** A header line ``sgcc-cache 2 <sha256 of the body> <KEYID:HMAC>`` (the
signature by the keyring's signing key, :mod:`sgcc.cache.trust`), then the body, JSON with
sorted keys and one space of indent (the drop-in's memo check relies on the top-level
``"key"`` line this writes, :meth:`sgcc.cache.store.Store.read_joined`). This is the format
of schema 2 (:data:`SCHEMA`), unchanged by this module: entries already in local and remote
caches read as they are, and what is written here reads with earlier versions.

**How it is checked.** :meth:`Entry.decode` refuses what is not intact (:class:`CacheError`),
what no trusted key signed or is of another schema (:class:`UntrustedEntry`), and a signed
entry made for another key than the one it is read under (an entry of another unit or context
moved there). What it accepts is parsed defensively: the signer may be a teammate's older
sgcc, so a malformed part reads as absent, never as an error later.

Kept lean: the drop-in imports this on a first hit only; json is imported to encode or
decode, the unit parser to join.
"""

from __future__ import annotations

from sgcc.cache import keys

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from sgcc.cache.trust import Keyring

#: 2: entries carry an HMAC by a trusted key (sgcc.cache.trust); schema-1 entries (a bare
#: checksum anyone can recompute) are never used.
SCHEMA = 2
MAGIC = "sgcc-cache"


class CacheError(ValueError):
    """An entry cannot be read (corrupt, truncated, wrong schema)."""


class UntrustedEntry(CacheError):
    """An intact entry no trusted key signed (another user's, an old format, an edited one),
    or one made for another key."""


def _number(value: object) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _texts(value: object) -> dict[str, str]:
    """The str -> str items of ``value`` (nothing when it is not a dict)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _str_list(value: object) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return list(value)


class Verdict:
    """One search's verdict on one function: its winner (``None``: nothing proven faster)
    with the evidence (generator, speedup and 95% interval), whether the search was complete
    (one cut short by the budget is searched again), when, with which minimum gain and
    generator configuration."""

    __slots__ = ("winner", "also", "generator", "speedup", "low", "high", "complete", "date", "min_gain",
                 "generators")

    def __init__(self, winner: str | None, *, also: dict[str, str] | None = None, generator: str = "",
                 speedup: float | None = None, low: float | None = None, high: float | None = None,
                 complete: bool = True, date: str = "", min_gain: float | None = None, generators: str = ""):
        self.winner = winner
        self.also: dict[str, str] = dict(also or {})  # callers the winner replaces too (Candidate.also)
        self.generator = generator
        self.speedup, self.low, self.high = speedup, low, high
        self.complete = complete
        self.date = date
        self.min_gain = min_gain
        self.generators = generators

    def to_dict(self) -> dict:
        out: dict = {"winner": self.winner}
        if self.winner is not None:
            out.update({"also": dict(self.also), "generator": self.generator, "speedup": self.speedup,
                        "low": self.low, "high": self.high})
        out.update({"complete": self.complete, "date": self.date, "min_gain": self.min_gain,
                    "generators": self.generators})
        return out

    @classmethod
    def from_dict(cls, data: object) -> Verdict | None:
        """The verdict ``data`` holds; None when it is no verdict at all."""
        if not isinstance(data, dict):
            return None
        return cls(_text(data.get("winner")), also=_texts(data.get("also")),
                   generator=_text(data.get("generator")) or "", speedup=_number(data.get("speedup")),
                   low=_number(data.get("low")), high=_number(data.get("high")),
                   complete=bool(data.get("complete")), date=_text(data.get("date")) or "",
                   min_gain=_number(data.get("min_gain")), generators=_text(data.get("generators")) or "")


class Applied:
    """What a build substitutes from an entry, and the evidence for it.

    ``units``: ``{function: text}``, or ``{sgcc.asm.WHOLE_UNIT: text}`` for the whole
    translation unit; never empty. ``baseline`` (gcc's assembly, whose digest is in the key),
    ``context`` (the key's context) and ``asm_flags`` let ``sgcc cache verify`` re-prove exactly
    what builds substitute. ``search``, ``date``, ``speedup``/``low``/``high``: the search that
    validated them and the program's gain. Project mode adds ``mode_of`` (the key of the compile
    whose search found the winners, when this is another mode of the same source) and, for a
    whole-project candidate, ``generator``, ``flags``, ``profile_sha256`` and ``functions`` (the
    searched functions joined into its text). Unset fields are not written."""

    __slots__ = ("units", "search", "date", "speedup", "low", "high", "baseline", "context", "asm_flags",
                 "mode_of", "generator", "flags", "profile_sha256", "functions")

    def __init__(self, units: dict[str, str], *, search: str | None = None, date: str | None = None,
                 speedup: float | None = None, low: float | None = None, high: float | None = None,
                 baseline: str | None = None, context: dict | None = None, asm_flags: list[str] | None = None,
                 mode_of: str | None = None, generator: str | None = None, flags: list[str] | None = None,
                 profile_sha256: str | None = None, functions: list[str] | None = None):
        self.units = units
        self.search, self.date = search, date
        self.speedup, self.low, self.high = speedup, low, high
        self.baseline, self.context, self.asm_flags = baseline, context, asm_flags
        self.mode_of = mode_of
        self.generator, self.flags, self.profile_sha256, self.functions = generator, flags, profile_sha256, functions

    def to_dict(self) -> dict:
        out = {name: getattr(self, name) for name in self.__slots__}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_dict(cls, data: object) -> Applied | None:
        """What ``data`` substitutes; None when it substitutes nothing (absent, or units that
        are not a non-empty map of names to texts: such an entry has no winner a build uses)."""
        if not isinstance(data, dict):
            return None
        units = data.get("units")
        if not isinstance(units, dict) or not units or len(_texts(units)) != len(units):
            return None
        context = data.get("context")
        return cls(dict(units), search=_text(data.get("search")), date=_text(data.get("date")),
                   speedup=_number(data.get("speedup")), low=_number(data.get("low")), high=_number(data.get("high")),
                   baseline=_text(data.get("baseline")), context=context if isinstance(context, dict) else None,
                   asm_flags=_str_list(data.get("asm_flags")), mode_of=_text(data.get("mode_of")),
                   generator=_text(data.get("generator")), flags=_str_list(data.get("flags")),
                   profile_sha256=_text(data.get("profile_sha256")), functions=_str_list(data.get("functions")))

    def but(self, **changes) -> Applied:
        """A copy with ``changes`` (the same winners applied to another compile, say)."""
        new = Applied(dict(self.units))
        for name in self.__slots__:
            setattr(new, name, changes[name] if name in changes else getattr(self, name))
        return new

    @property
    def whole(self) -> bool:
        """Whether this replaces the whole translation unit."""
        from sgcc.asm import WHOLE_UNIT

        return WHOLE_UNIT in self.units

    def join(self, asm_text: str) -> str:
        """``asm_text`` (gcc's assembly of the unit) with these units substituted, as a build
        substitutes them. Raises KeyError when a unit is not a function of ``asm_text``."""
        from sgcc.asm import WHOLE_UNIT

        if WHOLE_UNIT in self.units:
            return self.units[WHOLE_UNIT]
        from sgcc.asm.units import AsmFile

        return AsmFile.parse(asm_text).join(self.units)


#: The body's fields this module reads; others are kept in :attr:`Entry.extra`.
_FIELDS = frozenset({"key", "schema", "source", "updated", "functions", "apply"})


class Entry:
    """One translation unit's cache entry (see the module docstring). ``version`` names the
    stored bytes it was read from (the body's checksum; "" for one not read from storage)."""

    __slots__ = ("key", "source", "updated", "functions", "applied", "extra", "version")

    def __init__(self, key: str = "", *, source: str = "", updated: str = "",
                 functions: dict[str, dict[str, Verdict]] | None = None, applied: Applied | None = None,
                 extra: dict | None = None):
        self.key = key
        self.source = source
        self.updated = updated
        self.functions: dict[str, dict[str, Verdict]] = functions if functions is not None else {}
        self.applied = applied
        self.extra: dict = extra if extra is not None else {}
        self.version = ""

    def substitution(self) -> dict[str, str] | None:
        """The units a build substitutes (:attr:`Applied.units`), or None."""
        return self.applied.units if self.applied is not None and self.applied.units else None

    @property
    def has_winners(self) -> bool:
        """Whether a build substitutes anything from this entry (the index of winners marks it)."""
        return self.substitution() is not None

    def record(self, function: str, search: str, verdict: Verdict) -> None:
        """Keep ``verdict`` as ``search``'s on ``function`` (replacing that search's earlier one)."""
        self.functions.setdefault(function, {})[search] = verdict

    # -- the body -------------------------------------------------------------------------

    def to_dict(self) -> dict:
        out = dict(self.extra)
        out.update({"schema": SCHEMA, "key": self.key, "source": self.source,
                    "functions": {fn: {"verdicts": {s: v.to_dict() for s, v in verdicts.items()}}
                                  for fn, verdicts in self.functions.items()}})
        if self.updated:
            out["updated"] = self.updated
        if self.applied is not None:
            out["apply"] = self.applied.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Entry:
        functions: dict[str, dict[str, Verdict]] = {}
        raw = data.get("functions")
        for fn, record in (raw.items() if isinstance(raw, dict) else ()):
            verdicts = record.get("verdicts") if isinstance(record, dict) else None
            kept = {s: v for s, v in ((s, Verdict.from_dict(d)) for s, d in
                                      (verdicts.items() if isinstance(verdicts, dict) else ()))
                    if isinstance(s, str) and v is not None}
            if isinstance(fn, str):
                functions[fn] = kept
        return cls(_text(data.get("key")) or "", source=_text(data.get("source")) or "",
                   updated=_text(data.get("updated")) or "", functions=functions,
                   applied=Applied.from_dict(data.get("apply")),
                   extra={k: v for k, v in data.items() if k not in _FIELDS})

    # -- bytes ----------------------------------------------------------------------------

    def encode(self, keyring: Keyring) -> bytes:
        """The entry's bytes, signed by ``keyring``'s signing key."""
        return sign_body(self.to_dict(), keyring)

    @classmethod
    def decode(cls, raw: bytes, keyring: Keyring | None = None, *, key: str | None = None) -> Entry:
        """The entry in ``raw``: :class:`CacheError` if it is not intact, :class:`UntrustedEntry`
        if ``keyring`` is given and none of its keys signed it, or ``key`` is given and it was
        made for another."""
        data, version = read_body(raw, keyring)
        if key is not None and data.get("key") != key:
            # A genuinely signed entry of another unit or context (an older version of this
            # file, say), moved under this key in a shared directory or by a remote.
            raise UntrustedEntry("the entry was made for another key")
        entry = cls.from_dict(data)
        entry.version = version
        return entry


def header(raw: bytes) -> list[str]:
    """The fields of an entry's header line (``[MAGIC, schema, checksum, signature]`` when it
    is one); [] when there is no line."""
    nl = raw.find(b"\n")
    return raw[:nl].decode("ascii", "replace").split() if nl >= 0 else []


def sign_body(data: dict, keyring: Keyring) -> bytes:
    """An entry's bytes for the body ``data``: the header line (checksum and the signing key's
    signature), then the JSON. :meth:`Entry.encode` writes through this; a test can write any
    body with it, as a hostile holder of a trusted key could."""
    import json

    body = json.dumps(data, sort_keys=True, indent=1).encode("utf-8", "surrogateescape")
    return f"{MAGIC} {SCHEMA} {keys.sha256(body).hexdigest()} {keyring.sign(body)}\n".encode() + body


def read_body(raw: bytes, keyring: Keyring | None = None) -> tuple[dict, str]:
    """The checked body of the entry bytes ``raw`` and its checksum (see :meth:`Entry.decode`)."""
    import json

    nl = raw.find(b"\n")
    if nl < 0:
        raise CacheError("truncated (no header)")
    head = header(raw)
    if len(head) < 3 or head[0] != MAGIC:
        raise CacheError("not an sgcc cache entry")
    body = raw[nl + 1:]
    if keys.sha256(body).hexdigest() != head[2]:
        raise CacheError("checksum mismatch (corrupt or truncated)")
    if head[1] != str(SCHEMA) or len(head) != 4:
        raise UntrustedEntry(f"schema {head[1]} (unsigned), expected {SCHEMA}")
    if keyring is not None and not keyring.verify(head[3], body):
        raise UntrustedEntry("not signed by a trusted key")
    try:
        data = json.loads(body.decode("utf-8", "surrogateescape"))
    except ValueError as exc:
        raise CacheError(f"bad JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("functions", {}), dict):
        raise CacheError("malformed entry")
    return data, head[2]
