"""The generated header tells the truth for its spec: each function's documented errors
are what the layers of that container's equation can return (layers/*.py, `errors`)."""
import glob
import os
import re

import pytest

from p2gen.check import check
from p2gen.parser import parse
from p2gen.plan import plan
from p2gen.render import render

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REC = "record item { id: u32; grp: i32; name: char[8]; }\n"


def header_of(text: str) -> str:
    checked = plan(check(parse(text, "t.p2"), "t"))
    return render(checked, "t.p2")[0]


def documented(header: str, container: str) -> dict:
    """{function: set of codes} from the `Errors:` line of each function's comment."""
    out = {}
    for comment, name in re.findall(r"/\*((?:(?!\*/).)*?)\*/\n(?:T_API )?[^\n]*?\bt_"
                                    + container + r"_(\w+)\(", header, re.S):
        m = re.search(r"Errors: ([^.]*)\.", comment)
        if m:
            out[name] = set(re.findall(r"P2_[A-Z]+", m.group(1)))
    return out


CASES = [
    # equation, insert, update, delete
    ("top2ds[avl[array[transient]]] with avl(key = id)",
     {"P2_ENOMEM"}, {"P2_NOTFOUND"}, {"P2_NOTFOUND"}),
    ("top2ds_qualify[hash[iarray[persistent]]] with hash(key = grp), iarray(key = id), "
     "persistent(file = \"t.db\")",
     {"P2_EDUP", "P2_ERANGE", "P2_ENOMEM", "P2_EIO"},
     {"P2_NOTFOUND", "P2_EDUP", "P2_ERANGE", "P2_ENOMEM", "P2_EIO"}, {"P2_NOTFOUND"}),
    ("top2ds[dlist[malloc[persistent]]] with persistent(file = \"t.db\")",
     {"P2_ENOMEM", "P2_EIO"}, {"P2_NOTFOUND"}, {"P2_NOTFOUND"}),
    ("delflag[top2ds[qsort[transient]]] with qsort(key = id)",
     {"P2_ENOMEM"}, {"P2_NOTFOUND"}, {"P2_NOTFOUND"}),
]


@pytest.mark.parametrize("equation,insert,update,delete", CASES, ids=lambda c: str(c)[:40])
def test_error_lists_are_what_the_layers_declare(equation, insert, update, delete):
    errs = documented(header_of(REC + f"container c of item = {equation};\n"), "c")
    assert errs["insert"] == insert
    assert errs["update"] == update
    assert errs["delete"] == delete
    # a plain field's setter cannot fail but for the element; a key's goes through update
    assert errs["set_grp"] == ({"P2_NOTFOUND"} | (update if "key = grp" in equation else set()))


def test_cursor_delete_over_shifting_storage_may_run_out_of_memory():
    """Over qsort a cursor remaps what it remembers on a delete (P2_ENOMEM); delflag only
    marks, so over it the cursor's delete cannot fail."""
    cur = "cursor all_of on c order by id;\n"
    plain = header_of(REC + "container c of item = top2ds[qsort[transient]] with qsort(key = id);\n" + cur)
    flagged = header_of(REC + "container c of item = delflag[top2ds[qsort[transient]]] "
                              "with qsort(key = id);\n" + cur)
    line = re.compile(r"next\(\) continues after it\.\n \* Errors: ([^.]*)\.")
    assert line.search(plain).group(1) == "P2_EINVAL (not on an element), P2_ENOMEM"
    assert line.search(flagged).group(1) == "P2_EINVAL (not on an element)"


SPECS = sorted(glob.glob(os.path.join(ROOT, "type_equations", "**", "*.p2"), recursive=True))


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: os.path.relpath(p, ROOT))
def test_only_keyed_storage_documents_duplicates(spec):
    """P2_EDUP and P2_ERANGE come from iarray: a container without it never lists them."""
    text = open(spec).read()
    checked = plan(check(parse(text, spec), None))
    header = render(checked, spec)[0]
    for info in checked.containers:
        errs = documented(header.replace(checked.prefix.upper() + "_API ", "T_API ")
                          .replace(checked.prefix + "_", "t_"), info.name)
        assert {"insert", "update", "delete", "reserve"} <= set(errs), errs
        keyed = info.has_layer("iarray")
        for fn in ("insert", "update"):
            assert ("P2_EDUP" in errs[fn]) == keyed, (info.name, fn, errs[fn])
