"""Layered configuration: command line > SGCC_* environment > project sgcc.toml > user file > defaults."""

from __future__ import annotations

import pytest

from sgcc import config
from sgcc.errors import SgccError


@pytest.fixture
def layers(tmp_path, monkeypatch):
    for key in list(__import__("os").environ):
        if key.startswith("SGCC_"):
            monkeypatch.delenv(key)
    user = tmp_path / "user.toml"
    monkeypatch.setenv("SGCC_CONFIG", str(user))
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    return user, project


def test_each_layer_overrides_the_one_below(layers, monkeypatch):
    user, project = layers
    cfg = config.load(cwd=project)
    assert (cfg.timing_rounds, cfg.source("timing_rounds")) == (20, "default")
    user.write_text("timing_rounds = 30\nmin_gain = 0.1\nisa = 'native'\n")
    (project / "sgcc.toml").write_text("[sgcc]\ntiming-rounds = 40\nmin-gain = 0.2\n")
    monkeypatch.setenv("SGCC_TIMING_ROUNDS", "50")
    cfg = config.load({"timing_rounds": None, "isa": "flags"}, cwd=project / "sub")  # found from a subdirectory
    assert (cfg.timing_rounds, cfg.source("timing_rounds")) == (50, "environment")
    assert cfg.min_gain == 0.2 and cfg.source("min_gain").startswith("project file")
    assert (cfg.isa, cfg.source("isa")) == ("flags", "command line")
    monkeypatch.delenv("SGCC_TIMING_ROUNDS")
    cfg = config.load({"timing_rounds": 60}, cwd=project)
    assert (cfg.timing_rounds, cfg.source("timing_rounds")) == (60, "command line")
    assert config.load(cwd=project).timing_rounds == 40


def test_bad_values_name_their_source(layers, monkeypatch):
    user, project = layers
    monkeypatch.setenv("SGCC_ISA", "avx9000")
    with pytest.raises(SgccError, match="SGCC_ISA"):
        config.load(cwd=project)
    monkeypatch.delenv("SGCC_ISA")
    (project / "sgcc.toml").write_text("roundz = 3\n")
    with pytest.raises(SgccError, match="unknown setting 'roundz'"):
        config.load(cwd=project)
    (project / "sgcc.toml").write_text("timing_rounds = [\n")
    with pytest.raises(SgccError, match="cannot read configuration file"):
        config.load(cwd=project)


def test_the_compile_path_resolves_through_the_same_layers(layers, monkeypatch, tmp_path):
    user, project = layers
    user.write_text('isa = "native"\ncache_dir = "user-cache"\n')
    monkeypatch.chdir(project / "sub")
    assert config.compile_settings() == {"cache": True, "isa": "native",
                                         "cache_dir": str((tmp_path / "user-cache").resolve()),
                                         "signing_key": "", "trusted_keys": "", "remote_storage": "",
                                         "remote_timeout": 150}
    (project / "sgcc.toml").write_text('[sgcc]\ncache = false\ncache-dir = "pc"\n')
    got = config.compile_settings()
    assert got == {"cache": False, "isa": "native", "cache_dir": str((project / "pc").resolve()),
                   "signing_key": "", "trusted_keys": "", "remote_storage": "", "remote_timeout": 150}
    cfg = config.load()
    assert (cfg.cache, cfg.isa, config.cache_dir(cfg)) == (got["cache"], got["isa"], got["cache_dir"])
    monkeypatch.setenv("SGCC_CACHE", "yes")
    monkeypatch.setenv("SGCC_ISA", "flags")
    assert config.compile_settings()["cache"] is True and config.compile_settings()["isa"] == "flags"
    # What `sgcc config` refuses, the compile path refuses too (the drop-in then warns and runs gcc).
    monkeypatch.setenv("SGCC_ISA", "fancy")
    with pytest.raises(SgccError, match="SGCC_ISA"):
        config.compile_settings()
    monkeypatch.delenv("SGCC_ISA")
    (project / "sgcc.toml").write_text("cache_sise = '1G'\n")
    with pytest.raises(SgccError, match="unknown setting"):
        config.compile_settings()


def test_sgcc_config_shows_what_each_default_stands_for(sgcc_exe, tmp_path):
    """`sgcc config` printed 0 or nothing for defaults that mean all cores, the model's context or
    gcc from PATH (issue 28): it shows the value in effect and what the default means."""
    import json
    import os
    import shutil

    from sgcc import proc

    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_")}
    env["SGCC_CONFIG"] = str(tmp_path / "none.toml")
    env["SGCC_JOBS"] = "3"
    r = proc.run([sgcc_exe, "config"], env=env, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line for line in r.stdout.decode().splitlines() if "  (" in line}
    for key, line in lines.items():
        assert line.split("  ", 1)[1].strip()[:1] not in ("(", ""), f"{key} shows no value: {line}"
    assert lines["threads"].split()[1] == str(len(os.sched_getaffinity(0)))
    assert "(default: 0 = all cores" in lines["threads"]
    assert lines["compiler"].split()[1] == shutil.which("gcc") and "gcc from PATH" in lines["compiler"]
    assert "at most 8192" in lines["context"] and "the model's own" in lines["context"]
    assert lines["jobs"].split()[1:] == ["3", "(environment)"]  # a value given is shown as given
    data = json.loads(proc.run([sgcc_exe, "config", "--json"], env=env, cwd=tmp_path, timeout=60).stdout)
    assert data["threads"]["value"] == 0 and data["threads"]["source"] == "default"
    assert data["threads"]["effective"] == len(os.sched_getaffinity(0))
    assert data["compiler"]["effective"] == shutil.which("gcc")
    assert "effective" not in data["jobs"] and "effective" not in data["min_gain"]


def test_config_declares_every_setting_with_its_type(layers):
    # mypy reads a setting's type from Config's declarations; they must name exactly the
    # settings there are, each with the type its conversion gives (the default has it).
    declared = config.Config.__annotations__
    assert set(declared) == set(config.SETTINGS)
    kinds = {"str": (str,), "int": (int,), "float": (float,), "bool": (bool,), "int | None": (int, type(None))}
    for key, setting in config.SETTINGS.items():
        assert isinstance(setting.default, kinds[declared[key]]), key
        assert not hasattr(config.Config, key), key  # a declaration only: reads reach __getattr__
    cfg = config.load({"seed": "7", "min_gain": "0.1"}, cwd=layers[1])
    assert cfg.seed == 7 and cfg.min_gain == 0.1 and cfg.clang == ""
    with pytest.raises(AttributeError):
        cfg.no_such_setting  # noqa: B018
