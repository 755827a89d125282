"""Issue 37 item 5: a flat module of `p2gen build --python` runs where p2gen is not
installed: p2gen's run-time support is copied beside it (`_<prefix>_runtime/`), and the
module imports that copy when `import p2gen` fails. Checked in a child process in which
every import of p2gen fails, the module loaded by file name as well as from sys.path."""
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from p2gen.cli import main

SPEC = """
record user { id: u32; }
record post { id: u32; time: i64; }
container users of user = top2ds_qualify[hash[array[transient]]] with hash(key = id, unique = true);
container posts of post = top2ds_qualify[hash[array[transient]]] with hash(key = id, unique = true);
relationship wrote one users.posts order by time desc to many posts.author = ilist;
"""

CHILD = r'''
import importlib.abc, importlib.util, json, sys
class NoP2gen(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "p2gen" or name.startswith("p2gen."):
            raise ImportError(f"no {name} here")
        return None
sys.meta_path.insert(0, NoP2gen())
if sys.argv[2] == "path":
    sys.path.insert(0, sys.argv[1])
    import flat
else:
    spec = importlib.util.spec_from_file_location("flat", sys.argv[1] + "/flat.py")
    flat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flat)
with flat.open(None) as db:
    u = db.users.insert(id=1)
    for i, t in enumerate([5, 9, 1]):
        db.posts.author.set(db.posts.insert(id=i, time=t), u)
    out = {"walk": [p.id for p in db.users.posts(u)],
           "feed": [p.id for p in db.users.posts.feed([u], 2)],
           "missing": None, "fast": "_it" not in vars(db.users.posts(u))}
    try:
        db.users.posts.feed([99], 1)
    except flat.NotFoundError as e:
        out["missing"] = type(e).__module__
out["p2gen_loaded"] = sorted(m for m in sys.modules if m.split(".")[0] == "p2gen")
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("flat")
    (root / "flat.p2").write_text(SPEC)
    r = CliRunner().invoke(main, ["build", str(root / "flat.p2"), "-o", str(root / "out"),
                                  "--python", "-q"])
    assert r.exit_code == 0, r.output
    return root / "out"


@pytest.mark.parametrize("how", ["path", "file"])
def test_flat_module_runs_without_p2gen(built, how):
    assert (built / "_flat_runtime" / "pyapi" / "__init__.py").exists()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(built), how], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out == {"walk": [1, 0, 2], "feed": [1, 0], "missing": "_flat_runtime.pyapi",
                   "fast": True, "p2gen_loaded": []}
