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
