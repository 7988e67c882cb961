import inspect
import sys
import textwrap

import pytest

from fuzzdce.core.errors import UsageError
from fuzzdce.running.patching import recording_patches
from fuzzdce.running.placements import IDENTITY, PLACEMENTS, resolve


@pytest.mark.parametrize("name", list(PLACEMENTS))
def test_every_patched_attribute_is_the_original_after_exit(name):
    with recording_patches() as applied, resolve(name)():
        for record in applied:
            assert inspect.getattr_static(record.owner, record.attribute) is not record.original
    if name in ("stock", IDENTITY):
        assert not applied, f"{name} patched {applied}"
    else:
        assert applied, f"{name} patched nothing"
    for record in applied:
        assert inspect.getattr_static(record.owner, record.attribute) is record.original


@pytest.mark.parametrize("name", list(PLACEMENTS))
def test_restored_even_when_the_body_raises(name):
    with recording_patches() as applied, pytest.raises(RuntimeError), resolve(name)():
        raise RuntimeError("boom")
    for record in applied:
        assert inspect.getattr_static(record.owner, record.attribute) is record.original


def test_rdnp_patches_every_alias_of_the_function():
    from thunder.core import transform_common

    original = transform_common.remove_duplicate_number_proxies
    with resolve("rdnp")():
        assert transform_common.remove_duplicate_number_proxies is not original
    assert transform_common.remove_duplicate_number_proxies is original


@pytest.mark.parametrize("name", list(PLACEMENTS))
def test_stock_thunder_0_2_6_has_no_placement_natively(name):
    assert PLACEMENTS[name].native() is None


def test_unknown_placement_names_the_choices():
    with pytest.raises(UsageError, match="stock, rdnp, symcall, symcall-fixed"):
        resolve("symcal")


def test_unimportable_module_is_a_usage_error():
    with pytest.raises(UsageError, match="cannot import"):
        resolve("no_such_module_xyz:patch")


def test_missing_attribute_is_a_usage_error():
    with pytest.raises(UsageError, match="no attribute"):
        resolve("fuzzdce.running.placements:no_such_thing")


def test_user_placement_from_a_module_on_the_path(tmp_path, monkeypatch):
    (tmp_path / "my_patch.py").write_text(
        textwrap.dedent(
            '''
            import contextlib
            ENTERED = []

            @contextlib.contextmanager
            def mine():
                """My DCE experiment."""
                ENTERED.append(True)
                yield
            '''
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    placement = resolve("my_patch:mine")
    assert placement.name == "my_patch:mine" and placement.description == "My DCE experiment."
    with placement():
        pass
    import my_patch

    assert my_patch.ENTERED == [True]


def test_a_module_imported_after_an_earlier_patch_has_its_alias_patched_too(monkeypatch):
    """Scans for aliases are kept between jobs (a scan of every thunder module costs a job as much
    as an oracle), but not past an import: a module loaded since, holding the original, is patched
    and restored like the others."""
    import types

    from thunder.core import transform_common

    from fuzzdce.running.patching import patch_everywhere

    original = transform_common.dce
    with patch_everywhere(transform_common, "dce", lambda trace, *a, **k: trace):
        pass  # the scan is kept now
    late = types.ModuleType("thunder.fuzzdce_late_alias")
    late.dce = original
    monkeypatch.setitem(sys.modules, late.__name__, late)

    def replacement(trace, *args, **kwargs):
        return original(trace, *args, **kwargs)

    with patch_everywhere(transform_common, "dce", replacement):
        assert late.dce is replacement and transform_common.dce is replacement
        with patch_everywhere(transform_common, "dce", lambda trace, *a, **k: trace) as wrapped:
            assert wrapped is replacement and late.dce is not replacement  # a patch of the patch reaches it too
        assert late.dce is replacement
    assert late.dce is original and transform_common.dce is original
