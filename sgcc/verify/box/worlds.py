"""The synthetic worlds a boxed run sees: no fixed fingerprint, and evidence from more than one.

The shipped program runs outside any box, in whatever environment its user has. A candidate
that recognises the box (its environment, ``argv[0]``, working directory, ``HOME``...) could
be right, or fast, only there. So no run sees a fixed environment: each :class:`Sandbox
<sgcc.verify.box.sandbox.Sandbox>` draws ``count`` worlds (two by default, the ``worlds``
setting) from a seed it takes from the operating system's random source when it is made
(never from the user's ``seed``, which may be written in a file: an adversary must not be
able to compute the worlds in advance). Every test runs in every world and every timing
round in one of them; a winner's confirmation must hold in each (:mod:`sgcc.verify.timing.rounds`).

Worlds differ pairwise in everything cheap to vary: the user name, ``HOME`` (paths of
different lengths), the working directory (``HOME`` or a directory under it), where the
binary lies and its name, the form of ``argv[0]`` (``./name``, a relative path, an absolute
path, a bare name found through ``PATH``), the values of ``PATH``, ``SHELL``, ``LANG``, which
other ordinary variables are set and in which order, the size of the environment (its
padding variable, which also moves the stack's alignment) and the host name. A behaviour that
depends on any of these differs between two worlds and fails a test, or the confirmation.

What a world shows is synthetic, never the user's: nothing of the real environment, home,
working directory, user name or host name enters it (a positive rule, not a list of what to
hide). What the kernel fixes (auxv apart from ``AT_EXECFN``, the pid namespace's numbers,
the mount view, the uid) is listed in docs/isolation.md with why a candidate cannot use it.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

#: The environment variable whose size varies (see :func:`sgcc.verify.box.sandbox.pad_value`):
#: one that ordinary login environments carry, at lengths from none to a few kilobytes.
PAD_VARIABLE = "LS_COLORS"
#: Default and most worlds per sandbox.
DEFAULT_COUNT = 2
MAX_COUNT = 8
#: Largest padding a world has for its test runs (timing draws its own per run).
MAX_PAD = 4096
_MIN_VARS = 11

_USERS = ("alice", "bob", "dev", "build", "runner", "kchen", "mlopez", "sam", "jdoe", "ci", "user", "rsingh",
          "oliviaw", "tmartin", "hwang")
_HOMES = ("/home/{u}", "/home/users/{u}", "/var/home/{u}", "/u/{u}", "/home/{u}2", "/export/home/{u}",
          "/home/staff/research/{u}", "/h/{u}")
_ROOT_HOMES = ("/root", "/var/root", "/home/root", "/srv/admin", "/root/ws", "/opt/home/root")
_PROJECTS = ("src", "work", "proj", "code", "repo", "build", "bench", "tmp", "dev", "git", "ws", "sandbox")
_NAMES = ("prog", "a.out", "main", "solve", "run", "app", "bench", "test", "tool", "sol")
_SHELLS = ("/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/zsh", "/bin/dash", "/usr/bin/fish")
# Locales that format numbers and classify ASCII as "C" does: a program's output must not change.
_LANGS = ("C", "C.UTF-8", "POSIX", "C.utf8")
_PATH_HEADS = ("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "/usr/local/bin:/usr/bin:/bin",
               "/usr/bin:/bin", "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games",
               "/usr/lib/ccache:/usr/local/bin:/usr/bin:/bin", "/opt/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
def _extras(home: str, user: str, uid: int) -> dict[str, tuple[str, ...]]:
    """Ordinary variables a login or desktop session may carry, with plausible values (none
    that changes what a program or a build it starts does: no ``MAKEFLAGS``, ``CC``, ``TZ``,
    ``LC_*``; a project's test command may run make in the box)."""
    return {
        "TERM": ("xterm-256color", "screen-256color", "xterm", "dumb", "tmux-256color", "vt100"),
        "SHLVL": ("1", "2", "3", "4"),
        "EDITOR": ("vim", "nano", "emacs", "vi", "/usr/bin/nvim"),
        "PAGER": ("less", "more", "less -R"),
        "LESS": ("-R", "-FRX", "-iR", "-M"),
        "COLORTERM": ("truecolor", "24bit", "yes"),
        "HISTCONTROL": ("ignoredups", "ignoreboth", "erasedups"),
        "HISTSIZE": ("1000", "5000", "100000", "500"),
        "LESSOPEN": ("| /usr/bin/lesspipe %s", "||/usr/bin/lesspipe.sh %s"),
        "GPG_TTY": ("/dev/pts/0", "/dev/pts/1", "/dev/pts/3", "/dev/pts/12"),
        "SSH_TTY": ("/dev/pts/0", "/dev/pts/2", "/dev/pts/5"),
        "SSH_CONNECTION": ("10.0.2.2 51324 10.0.2.15 22", "192.168.1.20 60022 192.168.1.5 22"),
        "SSH_CLIENT": ("10.0.2.2 51324 22", "192.168.1.20 60022 22", "172.16.0.9 41000 22"),
        "SSH_AUTH_SOCK": (f"/tmp/ssh-XXXXb{uid % 97}Qz/agent.{1000 + uid % 8000}", f"/run/user/{uid}/keyring/ssh"),
        "DEBEMAIL": ("me@example.org", "dev@example.com", "x@example.net"),
        "CLICOLOR": ("1",),
        "MANPAGER": ("less -s", "most", "less"),
        "DISPLAY": (":0", ":1", "localhost:10.0"),
        "WAYLAND_DISPLAY": ("wayland-0", "wayland-1"),
        "XDG_SESSION_TYPE": ("x11", "wayland", "tty"),
        "XDG_SESSION_CLASS": ("user",),
        "XDG_SESSION_ID": ("2", "5", "c1", "17"),
        "XDG_CURRENT_DESKTOP": ("GNOME", "KDE", "XFCE", "ubuntu:GNOME", "sway"),
        "XDG_DATA_DIRS": ("/usr/local/share:/usr/share", "/usr/share/gnome:/usr/local/share/:/usr/share/"),
        "XDG_CONFIG_DIRS": ("/etc/xdg", "/etc/xdg/xdg-ubuntu:/etc/xdg"),
        "DBUS_SESSION_BUS_ADDRESS": (f"unix:path=/run/user/{uid}/bus",),
        "DESKTOP_SESSION": ("gnome", "plasma", "xfce", "ubuntu"),
        "GOPATH": (f"{home}/go", f"{home}/src/go"),
        "CARGO_HOME": (f"{home}/.cargo",),
        "NVM_DIR": (f"{home}/.nvm",),
        "JAVA_HOME": ("/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/default-java"),
        "PYTHONDONTWRITEBYTECODE": ("1",),
        "VIRTUAL_ENV": (f"{home}/.venv", f"{home}/venvs/tools"),
        "TMUX": (f"/tmp/tmux-{uid}/default,1234,0", f"/tmp/tmux-{uid}/default,2811,1"),
        "GIT_EDITOR": ("vim", "nano"),
        "NO_AT_BRIDGE": ("1",),
        "QT_ACCESSIBILITY": ("1",),
        "GTK_MODULES": ("gail:atk-bridge",),
        "DEBFULLNAME": ("A. Developer", "Build Bot", "Sam Example"),
        "HOSTTYPE": ("x86_64",),
        "MOTD_SHOWN": ("pam",),
        "INVOCATION_ID": ("7f3a0c9e2b1d4e6fa1b2c3d4e5f60718", "0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f50"),
        "JOURNAL_STREAM": ("8:23456", "9:41022"),
    }


#: Prefixes of variables that change what the C library, the loader or a build does: a fresh
#: name never starts so (a world must not change the program's behaviour, only its view).
_MEANINGFUL = ("LD_", "MALLOC", "GLIBC", "LC_", "LANG", "TZ", "GCONV", "LOCPATH", "NLSPATH", "HOSTALIASES", "RES_",
               "LOCALDOMAIN", "TMP", "TEMP", "POSIXLY", "GETCONF", "LIBC", "SGCC", "PYTHON", "PERL", "CC", "CXX",
               "CFLAGS", "CPP", "LDFLAGS", "MAKE", "GNU", "MFLAGS", "COLUMNS", "LINES", "TERM", "HOME", "PATH",
               "SHELL", "USER", "PWD", "OLDPWD", "IFS", "ENV", "BASH", "CDPATH", "DISPLAY", "XDG", "DBUS", "SSH",
               "GIT", "OMP", "MKL", "OPENBLAS", "CUDA", "NO_COLOR", "CLICOLOR", "FORCE", "DEBUG", "VERBOSE", "CI")
_CONSONANTS, _VOWELS = "BCDFGHJKLMNPRSTVWXZ", "AEIOUY"
_FLAGS = ("1", "yes", "true", "on", "0", "no")


def fresh_name(rng: random.Random) -> str:
    """A plausible variable name no list holds: one to three words of two to four syllables."""
    while True:
        words = ["".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 4)))
                 for _ in range(rng.randint(1, 3))]
        name = "_".join(words)
        if not name.startswith(_MEANINGFUL):
            return name


def fresh_value(rng: random.Random) -> str:
    """A value for a fresh variable: a word, a number, a path or a flag, of random length."""
    kind = rng.randrange(4)
    if kind == 0:
        return str(rng.randint(0, 10 ** rng.randint(1, 9)))
    if kind == 1:
        return "/" + "/".join(fresh_name(rng).lower() for _ in range(rng.randint(1, 4)))
    if kind == 2:
        return rng.choice(_FLAGS)
    return fresh_name(rng).lower()


_HOSTS = ("devbox", "build-03", "ws-17", "laptop", "ci-runner-2", "node7", "lab-pc", "mbp", "desk42", "worker-a9")


@dataclass(frozen=True)
class World:
    """One synthetic world: who the program is, where it lies and runs, how it was started,
    and its environment (``env``, in order, without the padding variable, whose place in the
    order is ``pad_at``; ``pad`` is its length in test runs)."""

    index: int
    user: str
    home: str
    cwd: str
    bindir: str
    name: str
    argv0: str
    hostname: str
    env: tuple[tuple[str, str], ...]
    pad_at: int
    pad: int

    @property
    def binary(self) -> str:
        """The binary's path inside the box."""
        return f"{self.bindir}/{self.name}"

    def environment(self, pad: str) -> dict[str, str]:
        """The run's environment in its order, with ``pad`` as the padding variable's value."""
        items = list(self.env)
        items.insert(self.pad_at, (PAD_VARIABLE, pad))
        return dict(items)

    def env_value(self, key: str) -> str:
        """The value of ``key`` in this world's environment ("" when unset)."""
        return dict(self.env).get(key, "")

    def describe(self) -> str:
        """A short account for a report or a failure (no values a test could not vary)."""
        return f"world {self.index + 1}"


def new_seed() -> int:
    """A seed from the operating system's random source: no one can compute the worlds first."""
    return int.from_bytes(os.urandom(8), "little")


def _draw(rng: random.Random, pool: tuple[str, ...], count: int) -> list[str]:
    """``count`` values of ``pool``, pairwise different as far as the pool goes (there are
    four locales that behave as "C" does, six shells): past that, values repeat, in a
    random order, rather than the worlds setting's top values failing."""
    drawn: list[str] = []
    while len(drawn) < count:
        drawn += rng.sample(pool, min(len(pool), count - len(drawn)))
    return drawn


def make(count: int, uid: int, seed: int | None = None) -> list[World]:
    """``count`` worlds for a program run as ``uid`` (0: root), from ``seed`` (default: fresh
    randomness), pairwise different in every varied property (see the module docstring; the
    few with small pools, LANG and SHELL, repeat past four and six worlds)."""
    if not 1 <= count <= MAX_COUNT:
        raise ValueError(f"worlds must be between 1 and {MAX_COUNT}")
    rng = random.Random(new_seed() if seed is None else seed)
    users = _draw(rng, _USERS, count)
    homes = _draw(rng, _ROOT_HOMES if uid == 0 else _HOMES, count)
    shells, langs, paths = _draw(rng, _SHELLS, count), _draw(rng, _LANGS, count), _draw(rng, _PATH_HEADS, count)
    hosts, names = _draw(rng, _HOSTS, count), _draw(rng, _NAMES, count)
    # The form of argv[0], and the working directory's depth, each different in every world.
    forms = rng.sample(("dot", "relative", "absolute", "bare"), min(count, 4))
    forms += [rng.choice(("dot", "relative", "absolute", "bare")) for _ in range(count - len(forms))]
    depths = rng.sample((0, 1, 2, 3), min(count, 4)) + [rng.randint(0, 3) for _ in range(max(0, count - 4))]
    pads = rng.sample(range(MAX_PAD + 1), count)
    # How many variables each world has (the padding variable apart): at least the 11 a
    # world may need, and as many as a desktop session's, a different number in each.
    counts = rng.sample(range(_MIN_VARS, _MIN_VARS + len(_extras("", "", 0)) + 1), count)
    worlds: list[World] = []
    for i in range(count):
        user = "root" if uid == 0 else users[i]
        home = homes[i].format(u=user)
        cwd = home
        for _ in range(depths[i]):
            cwd += "/" + rng.choice(_PROJECTS) + rng.choice(("", "", "-" + str(rng.randint(1, 99))))
        form, name = forms[i], names[i]
        if form == "dot":
            bindir, argv0 = cwd, f"./{name}"
        elif form == "relative":
            sub = rng.choice(("build", "bin", "out", "obj", ".build"))
            bindir, argv0 = f"{cwd}/{sub}", f"{sub}/{name}"
        elif form == "absolute":
            bindir = rng.choice((cwd, f"{home}/bin", f"{home}/.local/bin", f"{cwd}/build"))
            argv0 = f"{bindir}/{name}"
        else:  # a bare name, found through PATH (first in it, so no system program shadows it)
            bindir, argv0 = rng.choice((f"{home}/bin", f"{home}/.local/bin")), name
        path = paths[i]
        extra_dirs = [d for d in (f"{home}/.local/bin", f"{home}/bin", f"{home}/.cargo/bin") if rng.random() < 0.4]
        if form == "bare":
            extra_dirs = [bindir, *(d for d in extra_dirs if d != bindir)]
        if extra_dirs:
            path = ":".join(extra_dirs) + ":" + path
        env = [("HOME", home), ("LANG", langs[i]), ("LOGNAME", user), ("PATH", path), ("PWD", cwd),
               ("SHELL", shells[i]), ("USER", user)]
        # Bash exports "_" as the path of the program it runs.
        env.append(("_", argv0 if "/" in argv0 else f"{bindir}/{name}"))
        if rng.random() < 0.5:
            env.append(("MAIL", f"/var/mail/{user}"))
        if depths[i]:
            env.append(("OLDPWD", home))
        if uid != 0 and rng.random() < 0.5:
            env.append(("XDG_RUNTIME_DIR", f"/run/user/{uid}"))
        # Then ordinary variables up to this world's count of variables (distinct per world).
        pool = _extras(home, user, uid)
        extras = rng.sample(sorted(pool), max(0, min(len(pool), counts[i] - len(env))))
        env += [(k, rng.choice(pool[k])) for k in extras]
        # And variables nobody can list in advance: names and values from fresh randomness,
        # a different number in each world, so that no pool of names (this file is public)
        # says which environment is a box (defence in depth: the footprint rule keeps a
        # candidate from reading the environment at all, docs/proof.md).
        # Their number also keeps this world's count of variables (the size of envp) unlike
        # every earlier world's: drawn independently, two worlds' counts met now and then.
        taken = {k for k, _ in env}
        earlier = {len(w.env) for w in worlds}
        options = rng.sample(range(1, 7), 6) + list(range(7, 7 + MAX_COUNT))
        target = len(env) + next(k for k in options if len(env) + k not in earlier)
        while len(env) < target:
            fresh = fresh_name(rng)
            if fresh not in taken:
                taken.add(fresh)
                env.append((fresh, fresh_value(rng)))
        rng.shuffle(env)
        worlds.append(World(index=i, user=user, home=home, cwd=cwd, bindir=bindir, name=name, argv0=argv0,
                            hostname=hosts[i], env=tuple(env), pad_at=rng.randint(0, len(env)), pad=pads[i]))
    return worlds
