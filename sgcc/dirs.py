"""Where sgcc keeps its files: the one rule for the user's configuration and cache directories.

On Linux (and other non-macOS POSIX systems) the XDG rule, which is what ``platformdirs`` says
there, spelled out so the compile path does not pay platformdirs' import (~8 ms a compile);
elsewhere ``platformdirs`` itself. Standard library only at module level.
"""

from __future__ import annotations

import os
import sys


def _xdg() -> bool:
    return os.name == "posix" and sys.platform != "darwin"


def user_config_dir() -> str:
    """The platform's configuration directory for sgcc (``$XDG_CONFIG_HOME/sgcc`` on Linux)."""
    if _xdg():
        return os.path.join(os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config"), "sgcc")
    import platformdirs

    return platformdirs.user_config_dir("sgcc")


def user_cache_dir() -> str:
    """The platform's cache directory for sgcc (``$XDG_CACHE_HOME/sgcc`` on Linux)."""
    if _xdg():
        return os.path.join(os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache"), "sgcc")
    import platformdirs

    return platformdirs.user_cache_dir("sgcc")


def user_data_dir() -> str:
    """The platform's data directory for sgcc (``$XDG_DATA_HOME/sgcc`` on Linux): models live there."""
    if _xdg():
        return os.path.join(os.environ.get("XDG_DATA_HOME", "").strip() or os.path.expanduser("~/.local/share"),
                            "sgcc")
    import platformdirs

    return platformdirs.user_data_dir("sgcc")


def config_file() -> str:
    """The user's configuration file: ``$SGCC_CONFIG``, else ``config.toml`` in :func:`user_config_dir`."""
    return os.environ.get("SGCC_CONFIG") or os.path.join(user_config_dir(), "config.toml")


def signing_key_file() -> str:
    """The user's own signing key: ``signing.key`` beside the user's configuration file."""
    return os.path.join(os.path.dirname(os.path.abspath(config_file())), "signing.key")


def cache_root() -> str:
    """The verdict cache's default directory: ``$SGCC_CACHE_DIR``, else :func:`user_cache_dir`."""
    return os.environ.get("SGCC_CACHE_DIR") or user_cache_dir()
