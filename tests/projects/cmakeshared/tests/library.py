"""The program loads the project's own library (libz.so.1 is also the system's zlib)."""
import subprocess
import sys

out = subprocess.run([sys.argv[1], "--version"], capture_output=True, text=True, check=True).stdout
if out.strip() != "1.0-adlersum":
    sys.exit(f"FAIL: the library loaded says {out.strip()!r}, not the project's 1.0-adlersum")
print("library: the project's own")
