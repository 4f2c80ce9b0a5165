"""Reading, splitting and reassembling gcc's x86-64 AT&T assembly."""

#: The unit name that stands for a whole translation unit's assembly: a candidate that replaces
#: all of it (``sgcc.candidates.Candidate.function``) and a cache entry's substitution of it
#: (``sgcc.cache.entry.Applied``). Here, in the lowest package both use, so it is written once.
WHOLE_UNIT = "<translation-unit>"
