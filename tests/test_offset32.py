"""persistent(links = offset32): references stored in 32 bits (layers/README.md, "Link
width"). The checker refuses what 32-bit links cannot hold; the generated code of a
64-bit file does not change."""
import pytest

from p2gen.check import check, fingerprint
from p2gen.errors import SpecError, SpecErrors
from p2gen.layers import LAYERS
from p2gen.layers.persistent import LINK32_LIMIT
from p2gen.parser import parse

REC = "record r { id: i32; v: i64; }\n"


def errors_of(text):
    with pytest.raises((SpecError, SpecErrors)) as info:
        check(parse(text, "t.p2"), "t")
    err = info.value
    return err.errors if isinstance(err, SpecErrors) else [err]


def unconverted(realm):
    """Layers of `realm` that still store 64-bit links (the checker refuses them)."""
    return [n for n, l in LAYERS.items() if l.realm == realm and not l.narrow_links]


def test_unconverted_layer_refused_naming_layer_and_parameter():
    names = unconverted("ds")
    if not names:
        pytest.skip("every ds layer stores narrow links")
    # an index layer when one is left, else the storage
    idx = [n for n in names if LAYERS[n].role == "index"]
    name = (idx or names)[0]
    if LAYERS[name].role == "index":
        eq = f"top2ds[{name}(key = id)[array[persistent(file = \"a.db\", links = offset32)]]]"
    else:
        eq = f"top2ds[{name}[persistent(file = \"a.db\", links = offset32)]]"
    errs = errors_of(REC + f"container c of r = {eq};\n")
    msg = next(e.message for e in errs if f"layer '{name}'" in e.message)
    assert "persistent(links = offset32)" in msg and "32-bit" in msg, msg
    assert "links = offset64" in msg


def test_reserve_above_32_gib_refused():
    text = REC + ("container c of r = top2ds[array[persistent(file = \"a.db\", links = offset32, "
                  f"reserve = {LINK32_LIMIT + 1})]];\n")
    msgs = [e.message for e in errors_of(text)]
    assert any("reserve" in m and "32 GiB" in m for m in msgs), msgs
