"""The checker: every error class, with its message, line and column."""
import pytest

from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from p2gen.layers import LAYERS
from p2gen.parser import parse
from p2gen.plan import explain, plan, reverse_walk_layers

REC = "record item { id: u32; grp: i32; score: i64; name: char[8]; ratio: f64; }\n"


def checked(text, prefix="t"):
    return plan(check(parse(text, "t.p2"), prefix))


def error_of(text, fragment=""):
    """The first error (or the first whose message holds `fragment`)."""
    with pytest.raises((SpecError, SpecErrors)) as info:
        checked(text)
    err = info.value
    errors = err.errors if isinstance(err, SpecErrors) else [err]
    return next((e for e in errors if fragment in e.message), errors[0])


def col_of(text, needle, line):
    return text.splitlines()[line - 1].index(needle) + 1


def assert_error(text, fragment, needle, line=2):
    err = error_of(text, fragment)
    assert fragment in err.message, err.message
    assert err.line == line, (err.line, err.render())
    assert err.col == col_of(text, needle, line), err.render()
    # the rendered message shows the line and underlines the culprit
    rendered = err.render()
    assert text.splitlines()[line - 1].strip() in rendered
    assert "^" in rendered
    return err


# --- equations and realms ------------------------------------------------------
def test_index_over_mem_names_layer_and_realms():
    text = REC + "container c of item = top2ds_qualify[hash[persistent]] with hash(key = id);\n"
    err = assert_error(text, "layer 'hash' needs a layer of realm 'ds' below it, got "
                             "'persistent' (realm 'mem')", "persistent")
    assert "t.p2:2:" in err.render()


def test_outermost_must_be_top():
    text = REC + "container c of item = hash[array[transient]] with hash(key = id);\n"
    assert_error(text, "outermost layer of container 'c' must be of realm 'top'", "hash")


def test_top_over_mem():
    text = REC + "container c of item = top2ds[transient];\n"
    assert_error(text, "layer 'top2ds' needs a layer of realm 'ds' below it, got 'transient' "
                       "(realm 'mem')", "transient")


def test_qualify_needs_top_below():
    text = REC + "container c of item = qualify[array[transient]];\n"
    assert_error(text, "layer 'qualify' needs a layer of realm 'top' below it, got 'array' "
                       "(realm 'ds')", "array")


def test_missing_layer_below():
    text = REC + "container c of item = top2ds_qualify[array];\n"
    assert_error(text, "layer 'array' needs a layer of realm 'mem' below it, got nothing",
                 "array")


def test_bottom_layer_takes_nothing_below():
    text = REC + "container c of item = top2ds_qualify[array[transient[array]]];\n"
    assert_error(text, "'transient' (realm 'mem') is a bottom layer and takes nothing below "
                       "it", "array]]]")


def test_unknown_layer_suggests():
    text = REC + "container c of item = top2ds_qualify[hsah[array[transient]]];\n"
    err = assert_error(text, "unknown layer 'hsah'; did you mean 'hash'?", "hsah")
    assert err.pos.length == 4


def test_index_over_qsort_is_rejected():
    text = REC + ("container c of item = top2ds_qualify[hash[qsort[transient]]]\n"
                  "    with hash(key = grp), qsort(key = score);\n")
    assert_error(text, "layer 'hash' cannot sit above 'qsort'", "hash")


# --- parameters ------------------------------------------------------------------
def test_missing_required_parameter():
    text = REC + "container c of item = top2ds_qualify[hash[array[transient]]];\n"
    assert_error(text, "layer 'hash' in container 'c' needs parameter 'key'", "hash")


def test_unknown_parameter_suggests_and_lists():
    text = REC + ("container c of item = top2ds_qualify[hash[array[transient]]] "
                  "with hash(key = id, bucket = 4);\n")
    err = assert_error(text, "layer 'hash' has no parameter 'bucket'; did you mean 'buckets'?",
                       "bucket =")
    assert "it takes key, buckets, fn, grow" in err.message


def test_key_not_a_field():
    text = REC + ("container c of item = top2ds_qualify[hash[array[transient]]] "
                  "with hash(key = idd);\n")
    assert_error(text, "'idd' is not a field of record 'item'; did you mean 'id'?", "idd")


def test_parameter_types():
    base = REC + "container c of item = top2ds_qualify[hash[array[transient]]] with WITH;\n"
    assert_error(base.replace('WITH', 'hash(key = id, buckets = "many")'),
                 "parameter 'buckets' of layer 'hash' must be an integer", '"many"')
    assert_error(base.replace('WITH', "hash(key = 5)"),
                 "parameter 'key' of layer 'hash' must be a field name", "5")
    assert_error(base.replace('WITH', "hash(key = id, fn = sha1)"),
                 "must be one of default, identity, got 'sha1'", "sha1")
    assert_error(base.replace('WITH', "hash(key = id, buckets = 0)"), "must be at least 1", "0")
    assert_error(base.replace('WITH', "hash(key = id, grow = 1)"), "must be true or false", "1)")


def test_identity_hash_needs_integer_key():
    text = REC + ("container c of item = top2ds_qualify[hash[array[transient]]] "
                  "with hash(key = name, fn = identity);\n")
    assert_error(text, "hash function 'identity' needs an integer key; field 'name' is char[8]",
                 "fn")


def test_iarray_key_must_be_integer():
    text = REC + ("container c of item = top2ds_qualify[iarray[transient]] "
                  "with iarray(key = ratio);\n")
    assert_error(text, "field 'ratio' is f64; this layer needs a key of kind int", "ratio")


def test_with_names_layer_not_in_equation():
    text = REC + ("container c of item = top2ds_qualify[array[transient]] "
                  "with avl(key = id);\n")
    assert_error(text, "'with' gives parameters to layer 'avl', which is not in the equation",
                 "avl")


def test_with_is_ambiguous_for_repeated_layer():
    text = REC + ("container c of item = top2ds_qualify[hash[hash[array[transient]]]] "
                  "with hash(key = id);\n")
    assert_error(text, "layer 'hash' appears 2 times", "hash(key")


def test_inline_parameters_for_repeated_layer():
    text = REC + ("container c of item = top2ds_qualify[hash(key = id)[hash(key = grp)"
                  "[array[transient]]]];\ncursor g on c where grp == $g;\n")
    ck = checked(text)
    c = ck.containers[0]
    assert [li.tag for li in c.chain] == ["top2ds_qualify", "hash", "hash2", "array", "transient"]
    assert ck.plans[c.cursors[0]].path.layer.tag == "hash2"


def test_parameter_given_twice():
    text = REC + ("container c of item = top2ds_qualify[hash(key = id)[array[transient]]] "
                  "with hash(key = grp);\n")
    assert_error(text, "parameter 'key' of layer 'hash' is given twice", "key = grp")


def test_persistent_needs_file():
    text = REC + "container c of item = top2ds_qualify[array[persistent]];\n"
    assert_error(text, "layer 'persistent' in container 'c' needs parameter 'file'", "persistent")


# --- names -----------------------------------------------------------------------
def test_duplicate_names_across_kinds():
    text = REC + ("container item of item = top2ds_qualify[array[transient]];\n")
    assert_error(text, "container 'item' is already declared as a record at line 1", "item of")


def test_duplicate_field():
    text = "record r {\n  a: u32; a: i64; }\n"
    assert_error(text, "field 'a' is declared twice in record 'r'", "a: i64")


def test_reserved_names():
    assert_error("record r {\n  for: u32; }\n", "field name 'for' is a C keyword", "for")
    assert_error("record r {\n  _x: u32; }\n", "starts with '_'", "_x")


def test_unknown_record():
    text = REC + "container c of itme = top2ds_qualify[array[transient]];\n"
    assert_error(text, "record 'itme', which is not declared; did you mean 'item'?", "itme")


def test_empty_record():
    assert_error("\nrecord r { }\n", "record 'r' has no fields", "r {")


# --- cursors ---------------------------------------------------------------------
CONT = REC + "container c of item = top2ds_qualify[avl[array[transient]]] with avl(key = score);\n"


def test_cursor_on_unknown_container():
    text = CONT + "cursor k on cc where id == 1;\n"
    assert_error(text, "cursor 'k' is on container 'cc', which is not declared; did you mean 'c'?",
                 "cc", line=3)


def test_unknown_field_in_predicate():
    text = CONT + "cursor k on c where id == 1 and scroe > $s;\n"
    assert_error(text, "'scroe' is not a field of record 'item'; did you mean 'score'?",
                 "scroe", line=3)


def test_comparison_without_field():
    text = CONT + "cursor k on c where 1 == $x;\n"
    assert_error(text, "a comparison must involve a field", "1 ==", line=3)


def test_parameter_type_conflict():
    text = CONT + "cursor k on c where id == $x or name == $x;\n"
    assert_error(text, "parameter $x is compared with a char[8] field here but a u32 field",
                 "$x;", line=3)


def test_constant_out_of_range_and_wrong_kind():
    assert_error(CONT + "cursor k on c where id == -1;\n",
                 "-1 is out of range for field 'id' (u32: 0 .. 4294967295)", "-1", line=3)
    assert_error(CONT + 'cursor k on c where id == "x";\n',
                 "cannot compare it with a string", '"x"', line=3)
    assert_error(CONT + "cursor k on c where name == 3;\n",
                 "compare it with a string", "3;", line=3)
    assert_error(CONT + 'cursor k on c where name == "much too long";\n',
                 "can never equal field 'name' (char[8])", '"much', line=3)


def test_where_needs_a_qualifying_layer():
    text = REC + ("container c of item = top2ds[array[transient]];\n"
                  "cursor k on c where id == 1;\n")
    assert_error(text, "has no qualifying layer", "k on", line=3)
    # qualify over top2ds provides it
    ok = REC + ("container c of item = qualify[top2ds[array[transient]]];\n"
                "cursor k on c where id == 1;\n")
    ck = checked(ok)
    assert ck.plans[ck.cursors[0]].residual_text == "id == 1"


def test_order_by_unknown_field():
    text = CONT + "cursor k on c order by scroe;\n"
    assert_error(text, "cannot order by 'scroe'", "scroe", line=3)


def test_order_by_needs_an_ordered_layer():
    text = CONT + "cursor k on c order by id;\n"
    assert_error(text, "no layer of container 'c'", "k on", line=3)


def test_several_errors_reported_together():
    text = REC + ("container c of item = top2ds_qualify[hash[array[transient]]];\n"
                  "container d of item = top2ds_qualify[hsah[array[transient]]];\n")
    with pytest.raises(SpecErrors) as info:
        checked(text)
    lines = [e.line for e in info.value.errors]
    assert lines == [2, 3]
    assert "needs parameter 'key'" in str(info.value)
    assert "unknown layer 'hsah'" in str(info.value)


# --- access-path selection ------------------------------------------------------------
PLANS = REC + """container c of item
    = top2ds_qualify[hash(key = grp)[avl(key = score)[iarray(key = id)[transient]]]];
cursor by_grp on c where grp == $g and score > 3;
cursor by_score on c where score >= $lo and score < $hi;
cursor by_id on c where id == $i;
cursor ordered on c where grp == $g order by score;
cursor anything on c where grp != 3 or name == "x";
"""


def plans():
    ck = checked(PLANS)
    return {k.name: ck.plans[k] for k in ck.containers[0].cursors}


def test_equality_picks_hash():
    p = plans()["by_grp"]
    assert (p.path.layer.name, p.path.kind) == ("hash", "eq")
    assert p.residual_text == "score > 3"


def test_range_picks_avl_and_consumes_both_bounds():
    p = plans()["by_score"]
    assert (p.path.layer.name, p.path.kind) == ("avl", "range")
    assert p.residual_text == "(none)"


def test_key_equality_on_iarray_is_direct():
    p = plans()["by_id"]
    assert (p.path.layer.name, p.path.kind) == ("iarray", "eq")
    assert p.path.cost == 1.0


def test_order_by_overrides_cheaper_hash():
    p = plans()["ordered"]
    assert p.path.layer.name == "avl" and p.path.ordered_by == "score"
    assert p.residual_text == "grp == $g"


def test_disjunction_scans_storage():
    p = plans()["anything"]
    assert p.path.layer.name == "iarray"  # ordered scan of the slots, cheapest full scan
    assert "or" in p.residual_text


def test_finds_are_planned_like_cursors():
    ck = checked(PLANS)
    c = ck.containers[0]
    assert sorted(c.finds) == ["grp", "id", "score"]
    assert ck.plans[c.finds["grp"]].path.layer.name == "hash"
    assert ck.plans[c.finds["score"]].path.layer.name == "avl"


def test_explain_text_names_choice_and_alternatives():
    text = explain(checked(PLANS))
    assert "cursor by_grp where grp == $g and score > 3" in text
    assert "chosen: hash(buckets=1024, fn=default, grow=true, key=grp) eq" in text
    assert "residual filter: score > 3" in text
    assert "not in score order" in text
    assert "find t_c_find_id where id == $id" in text


def test_paper_equations_are_accepted_verbatim():
    text = """record account { id: u32; branch: u32; balance: i64; filler: char[84]; }
container a1 of account = top2ds_qualify[avl[array[persistent]]] with avl(key = id), persistent(file = "x.db");
container a2 of account = top2ds_qualify[qsort[transient]] with qsort(key = id);
container a3 of account = top2ds_qualify[hash[array[persistent]]] with hash(key = id), persistent(file = "x.db");
container a4 of account = top2ds_qualify[iarray[transient]] with iarray(key = id);
"""
    c = checked(text)
    assert [x.name for x in c.containers] == ["a1", "a2", "a3", "a4"]
    assert len(c.files) == 1 and [x.name for x in c.files[0].containers] == ["a1", "a3"]


# --- names the generated C defines -----------------------------------------------
# The checker renders the spec and reads the C names back: a name defined twice, a macro of
# the headers the generated code includes, or a runtime name is refused at the declaration
# that made it (line and column), never left to the C compiler.
HT = "top2ds_qualify[hash[array[transient]]] with hash(key = id)"
PT = 'top2ds_qualify[hash[array[persistent]]] with hash(key = id), persistent(file = "x.db")'


def load_file(tmp_path, text, name="t.p2", prefix=None):
    from p2gen.build import load
    path = tmp_path / name
    path.write_text(text)
    return load(str(path), prefix)


def name_error(tmp_path, text, name="t.p2", prefix=None):
    with pytest.raises((SpecError, SpecErrors)) as info:
        load_file(tmp_path, text, name, prefix)
    err = info.value
    return err.errors if isinstance(err, SpecErrors) else [err]


@pytest.mark.parametrize("text, line, needle, fragment", [
    (f"record db {{ id: u32; }}\ncontainer c of db = {HT};\n", 1, "db", "'t_db'"),
    (f"record ref {{ id: u32; }}\ncontainer c of ref = {HT};\n", 1, "ref", "'t_ref'"),
    (f"record c_elem {{ id: u32; }}\ncontainer c of c_elem = {HT};\n", 1, "c_elem",
     "container 'c'"),
    (f"record r {{ id: u32; }}\ncontainer a of r = {HT};\ncontainer a_all of r = {HT};\n",
     3, "a_all", "container 'a'"),
    (f"record r {{ id: u32; insert: u32; }}\ncontainer a of r = {HT};\n"
     f"container a_set of r = {HT};\n", 3, "a_set", "'t_a_set_insert'"),
    (f"record r {{ id: u32; }}\ncontainer err of r = {HT};\n", 2, "err", "'err'"),
    (f"record r {{ id: u32; }}\ncontainer open of r = {HT};\n", 2, "open", "'open'"),
    (f"record r {{ id: u32; }}\ncontainer seg of r = {PT};\n", 2, "seg", "'seg'"),
    (f"record r {{ id: u32; }}\ncontainer c of r = {HT};\ncursor k on c where id == $db;\n",
     3, "$db", "parameter $db"),
    ("record r { id: u32; }\ncontainer c of r = top2ds_qualify[array[transient]];\n"
     "container c_x of r = top2ds_qualify[array[transient]];\n"
     "container d of r = top2ds_qualify[array[transient]];\n"
     "relationship rel one c.x to many d.y = ilist;\n", 5, "x to", "container 'c_x'"),
] + [(f"record r {{ id: u32; {m}: u32; }}\ncontainer c of r = {HT};\n", 1, m, f"'{m}'")
     for m in ("EOF", "errno", "INT64_MIN", "SIZE_MAX", "BUFSIZ", "P2_NIL", "linux", "stdin")]
  + [(f"record r {{ id: u32; }}\ncontainer epoch of r = {HT};\n", 2, "epoch", "'epoch'"),
     (f"record r {{ id: u32; P2_ERR_MSG_SIZE: u32; }}\ncontainer c of r = {HT};\n", 1,
      "P2_ERR_MSG_SIZE", "p2_runtime.h")],
    ids=["record-db", "record-ref", "record-c_elem", "a-and-a_all", "insert-and-a_set",
         "container-err", "container-open", "container-seg", "param-db", "role-x-c_x",
         "EOF", "errno", "INT64_MIN", "SIZE_MAX", "BUFSIZ", "P2_NIL", "linux", "stdin",
         "container-epoch-member", "field-runtime-macro"])
def test_generated_name_collisions_are_checker_errors(tmp_path, text, line, needle, fragment):
    errors = name_error(tmp_path, text)
    e = next((e for e in errors if fragment in e.message), errors[0])
    assert fragment in e.message and "choose another name" in e.message, e.render()
    assert e.line == line, e.render()
    assert e.col == text.splitlines()[line - 1].index(needle) + 1, e.render()


def test_spec_prefix_meeting_the_runtime_is_refused(tmp_path):
    text = f"record r {{ id: u32; }}\ncontainer c of r = {HT};\n"
    errors = name_error(tmp_path, text, name="p2.p2")
    assert any("spec prefix 'p2'" in e.message and "p2_runtime.h" in e.message
               for e in errors), [e.render() for e in errors]
    load_file(tmp_path, text, name="p2.p2", prefix="mine")   # --prefix is the way out


def test_a_record_meeting_a_runtime_tag_is_refused(tmp_path):
    # prefix p2 and record seg: the typedef and struct tag p2_seg, the runtime's segment
    text = f"record seg {{ id: u32; }}\ncontainer c of seg = {HT};\n"
    errors = name_error(tmp_path, text, name="p2.p2")
    e = next(e for e in errors if "record 'seg'" in e.message)
    assert "'p2_seg'" in e.message and "p2_runtime.h" in e.message, e.render()
    assert (e.line, e.col) == (1, 8), e.render()


def test_double_underscore_names_are_reserved(tmp_path):
    text = f"record r {{ id: u32; }}\ncontainer a__hash of r = {HT};\n"
    [e] = name_error(tmp_path, text)
    assert "contains '__'" in e.message and (e.line, e.col) == (2, 11)


def test_names_near_generated_ones_are_fine(tmp_path):
    """Only real collisions are refused: a cursor named after its container, a field named
    like an API verb in a container without a clash, a lower-case macro-like name that is
    no macro."""
    load_file(tmp_path, f"record r {{ id: u32; insert: u32; count: u32; stdio: u8; }}\n"
                        f"container parts of r = {HT};\n"
                        f"cursor parts_of_kind on parts where insert == $kind;\n")


def test_record_size_is_bounded(tmp_path):
    ok = "record r { id: u32; s: char[65532]; }\n" \
         "container c of r = top2ds_qualify[array[transient]];\n"
    load_file(tmp_path, ok)
    for text, line, needle in (
            ("record r { id: u32; s: char[9223372036854775807]; }\n", 1, "s:"),
            ("record r { id: u32; s: char[65533]; }\n", 1, "r {"),
            ("record r { id: u32; s: char[40000]; t: char[40000]; }\n", 1, "r {")):
        text += "container c of r = top2ds_qualify[array[transient]];\n"
        errors = name_error(tmp_path, text)
        e = errors[0]
        assert "65536 bytes, the most a record holds" in e.message, e.render()
        assert (e.line, e.col) == (line, text.splitlines()[0].index(needle) + 1), e.render()


@pytest.mark.parametrize("spec_name", ["int64.p2", "time.p2", "size.p2"])
def test_generated_names_meeting_header_declarations_are_refused(tmp_path, spec_name):
    """A spec `int64.p2` with a record `t` would typedef `int64_t` again."""
    text = "record t { id: u32; }\ncontainer c of t = top2ds_qualify[array[transient]];\n"
    [e] = name_error(tmp_path, text, name=spec_name)
    assert f"'{spec_name[:-3]}_t'" in e.message and "headers" in e.message, e.render()
    assert (e.line, e.col) == (1, 8)


@pytest.mark.parametrize("name", [n for n, l in LAYERS.items() if l.realm == "ds"])
def test_keeps_order_agrees_with_the_paths(name):
    """A ds layer's `keeps_order` (what the spec fuzzer and the test matrices go by) is
    what its paths offer: a cursor may `order by` its key exactly when it says so."""
    layer = LAYERS[name]
    keyed = any(p.name == "key" and p.kind == "field" for p in layer.params)
    if not keyed:
        assert not layer.keeps_order, f"layer '{name}' has no key to keep order by"
        return
    below = "[transient]" if layer.below == "mem" else "[array[transient]]"
    text = (REC + f"container c of item = top2ds_qualify[{name}(key = id){below}];\n"
            "cursor k on c where grp > 0 order by id;\n")
    if layer.keeps_order:
        spec = checked(text)
        path = spec.plans[spec.container("c").cursors[0]].path
        assert (path.layer.name, path.ordered_by) == (name, "id")
    else:
        assert "order by" in error_of(text).message


# --- order by ... desc ------------------------------------------------------------
def test_desc_over_hash_only_names_cursor_container_and_what_would_serve():
    text = REC + ("container c of item = top2ds_qualify[hash(key = grp)[array[transient]]];\n"
                  "cursor bids on c where grp > 0 order by score desc;\n")
    err = assert_error(text, "cursor 'bids' asks for order by 'score' desc", "desc", line=3)
    assert "container 'c' (top2ds_qualify[hash(" in err.message
    assert "no layer keeps elements in that order" in err.message
    serve = reverse_walk_layers()
    assert serve and all(n in err.message.split("; add ")[1] for n in serve), err.message
    assert err.message.endswith(" with key = score")
    assert err.render().startswith("t.p2:3:")


def test_desc_over_a_layer_without_reverse_walk_says_so(monkeypatch):
    """A layer keeps the order but cannot walk it backwards (as a new ordered layer may
    not, at first: here iarray made to say so): the error names it, and the layers that
    would serve the order."""
    monkeypatch.setattr(LAYERS["iarray"], "reverse_walk", False)
    text = REC + ("container c of item = top2ds_qualify[iarray(key = id)[transient]];\n"
                  "cursor k on c where grp > 0 order by id desc;\n")
    err = assert_error(text, "iarray keeps id order but cannot walk it backwards", "desc",
                       line=3)
    assert "walks id order backwards" in err.message
    assert "iarray" not in err.message.split("; add ")[1]
    # ascending, the same container serves the order
    checked(text.replace(" desc;", ";"))


def test_desc_equality_on_the_order_key_needs_no_reverse_walk():
    """Every element of an equality path has the same key: any layer's order serves it."""
    text = REC + ("container c of item = top2ds_qualify[iarray(key = id)[transient]];\n"
                  "cursor k on c where id == $i order by id desc;\n")
    spec = checked(text)
    path = spec.plans[spec.container("c").cursors[0]].path
    assert (path.layer.name, path.kind, path.descending) == ("iarray", "eq", False)


@pytest.mark.parametrize("name", [n for n, l in LAYERS.items() if l.realm == "ds"])
def test_reverse_walk_agrees_with_the_paths(name):
    """A ds layer that says `reverse_walk` serves `order by its key desc` with a range
    walked backwards; one that keeps order without it is refused."""
    layer = LAYERS[name]
    if not layer.keeps_order:
        assert not layer.reverse_walk, f"layer '{name}' keeps no order to walk backwards"
        return
    below = "[transient]" if layer.below == "mem" else "[array[transient]]"
    text = (REC + f"container c of item = top2ds_qualify[{name}(key = id){below}];\n"
            "cursor k on c where grp > 0 order by id desc;\n"
            "cursor r on c where id >= $lo and id < $hi order by id desc;\n")
    if layer.reverse_walk:
        spec = checked(text)
        for cur in spec.container("c").cursors[:2]:
            path = spec.plans[cur].path
            assert (path.layer.name, path.ordered_by, path.kind, path.descending) == \
                (name, "id", "range", True)
        assert "order by id desc" in explain(spec)
        assert "range, descending" in explain(spec)
    else:
        assert "desc" in error_of(text).message


# --- the cost model: btree beside the other ordered layers ---------------------------
# Costs are cache-line reads (layers/base.py, COST_UNIT); btree's come from its height and
# fanout, which follow from the node size, the key's size and the container size assumed.
BTREE_PLANS = REC + """container b of item
    = top2ds_qualify[hash(key = grp)[btree(key = score)[avl(key = ratio)[array(capacity = 1000000)[transient]]]]];
cursor b_score on b where score == $s;
cursor b_grp on b where grp == $g and score == $s;
cursor b_range on b where score >= $lo and score < $hi;
container t of item
    = top2ds_qualify[btree(key = id)[avl(key = id)[array(capacity = 1000000)[transient]]]];
cursor t_id on t where id == $i;
container q of item = top2ds_qualify[qsort(key = id, capacity = 1000000)[transient]];
cursor q_id on q where id == $i;
"""


def test_btree_costs_follow_height_and_fanout():
    from p2gen.layers.btree import geometry
    ck = checked(BTREE_PLANS)
    li = next(li for li in ck.containers[0].ds if li.name == "btree")
    g = geometry(li)
    # i64 keys, 64-bit links, 1024-byte nodes: 24-byte header, then keys and references
    assert (g.node, g.leaf_cap, g.inner_cap) == (1024, 62, 41)
    # a million entries, nodes 70% full: ~23,000 leaves under inner nodes of ~29 children
    assert g.height(1_000_000) == 4 and g.height(5) == 1 and g.height(100) == 2
    assert g.lines_per_node() == 3   # 16 lines: the first, then half a line per halving
    plans_ = {k.name: ck.plans[k] for info in ck.containers for k in info.cursors}
    eq = plans_["b_score"].path
    assert (eq.layer.name, eq.kind) == ("btree", "range")
    assert eq.cost == pytest.approx(4 * g.lines_per_node() + 1)
    # the node size moves the cost: bigger nodes, fewer levels, more lines per node
    big = checked(BTREE_PLANS.replace("btree(key = score)", "btree(key = score, node = 8192)"))
    eq_big = next(big.plans[k] for k in big.containers[0].cursors if k.name == "b_score").path
    gb = geometry(next(li for li in big.containers[0].ds if li.name == "btree"))
    assert gb.height(1_000_000) < g.height(1_000_000)
    assert eq_big.cost == pytest.approx(gb.height(1_000_000) * gb.lines_per_node() + 1)


def test_planner_chooses_by_cost_between_btree_avl_qsort_and_hash():
    ck = checked(BTREE_PLANS)
    p = {k.name: ck.plans[k] for info in ck.containers for k in info.cursors}
    # hash: one bucket beats any descent
    assert p["b_grp"].path.layer.name == "hash" and p["b_grp"].residual_text == "score == $s"
    # btree beats avl on the same key (4 levels of 3 lines against 21 elements)...
    t = p["t_id"]
    assert t.path.layer.name == "btree"
    avl = next(c.option for c in t.candidates if c.option is not None
               and c.layer.name == "avl" and "id == $i" in c.option.why)
    assert t.path.cost < avl.cost
    # ...and qsort's binary search over the elements
    assert t.path.cost < p["q_id"].path.cost
    # a range through the tree beats scanning the array
    r = p["b_range"]
    assert r.path.layer.name == "btree" and r.residual_text == "(none)"


def test_explain_shows_costs_with_units_and_sizes():
    text = explain(checked(BTREE_PLANS))
    assert "sizes assumed: 1,000,000 elements (its storage's capacity); costs in cache-line reads" in text
    assert "4 levels of 1024-byte nodes (62 entries per leaf, 42 children per inner node, 70% full)" in text
    assert "cache-line reads)" in text
    small = explain(checked(REC + "container s of item = top2ds_qualify[btree(key = id)[array[transient]]];\n"
                                  "cursor s_id on s where id == $i;\n"))
    assert "sizes assumed: 10,000 elements (the planner's default)" in small
