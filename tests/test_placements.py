import inspect
import textwrap

import pytest

from fuzzdce.core.errors import UsageError
from fuzzdce.running.placements import IDENTITY, PLACEMENTS, recording_patches, resolve


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
