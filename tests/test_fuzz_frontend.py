"""Hostile specs: random mutations of the example specs, and random token soup, must give
a clean SpecError (or be accepted), never a Python exception of another kind."""
import glob
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from p2gen.parser import parse
from p2gen.plan import explain, plan
from p2gen.render import render

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = [open(p).read() for p in sorted(glob.glob(os.path.join(ROOT, "type_equations", "*.p2")))]
TOKENS = ["record", "container", "cursor", "of", "with", "on", "where", "order", "by", "and",
          "or", "not", "{", "}", "[", "]", "(", ")", ";", ":", ",", "=", "==", "!=", "<", "<=",
          ">", ">=", "$p", "x", "id", "u32", "i8", "f64", "char", "[4]", "0", "-1", "1e9",
          "18446744073709551616", '"f.db"', "hash", "avl", "array", "iarray", "qsort",
          "malloc", "dlist", "odlist", "transient", "persistent", "top2ds", "qualify",
          "top2ds_qualify", "delflag", "key", "buckets", "file", "true", "\n", " "]


def run_frontend(text):
    try:
        checked = plan(check(parse(text, "fuzz.p2"), "fz"))
    except (SpecError, SpecErrors) as e:
        assert str(e)  # renders without raising
        return
    explain(checked)
    render(checked, "fuzz.p2")


FUZZ = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_mutated_examples(seed, data):
    text = seed
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(text)))
        j = data.draw(st.integers(i, min(len(text), i + 12)))
        repl = data.draw(st.sampled_from(TOKENS + [""]))
        text = text[:i] + repl + text[j:]
    run_frontend(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_token_soup(tokens):
    run_frontend(" ".join(tokens))


@FUZZ
@given(st.text(max_size=200))
def test_arbitrary_text(text):
    run_frontend(text)
