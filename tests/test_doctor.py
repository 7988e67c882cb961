"""``fuzzdce doctor``: which Thunder this is, and what each placement will mean under it."""

from __future__ import annotations

from pathlib import Path

import thunder

from fuzzdce.cli import main
from fuzzdce.core.model import Placement
from fuzzdce.running.doctor import CANNOT, NATIVE, NEEDS_PATCH, placement_status
from fuzzdce.running.placements import PLACEMENTS, stock


def test_a_placement_is_native_needs_its_patch_or_cannot_take_it():
    assert placement_status(Placement("p", stock, "patches f"))[0] == NEEDS_PATCH
    assert placement_status(Placement("p", stock, native=lambda: "f does it")) == (NATIVE, "f does it")
    assert placement_status(Placement("p", stock, missing=lambda: "no thunder.f")) == (CANNOT, "no thunder.f")


def test_the_built_in_placements_need_their_patch_under_thunder_0_2_6():
    for name in ("rdnp", "symcall", "symcall-fixed"):
        assert placement_status(PLACEMENTS[name])[0] == NEEDS_PATCH, name


def test_doctor_prints_thunder_with_its_path_and_every_placement(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert str(Path(thunder.__file__).parent) in out and "torch" in out and "python" in out
    assert all(f"  {name} " in out for name in PLACEMENTS)
