"""Reading, splitting and reassembling gcc's x86-64 AT&T assembly."""
