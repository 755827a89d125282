"""The names pass: the last word on a planned spec, after emission. Refuses a spec whose
generated C would define one name twice, or define a name that is a macro of the headers
it includes or a name of the runtime. What the generated C defines is read from the
tables of what the templates emit (cfuncs.FunctionTable: every function, type, macro and
variable goes through a `cfunc` or `cdecl` construct, which says the names it defines):
the spec's header and source as the emit pass kept them, and the verifier and harness
programs rendered beside them, so that every name any template emits is covered; what the
runtime header defines, from its list (cnames.runtime_definitions, c_runtime.txt). No C
is read back. Each collision is reported once per pair of declarations, at the spec
declaration that made the name (the most specific one), naming the other.
"""
from __future__ import annotations

import os
from typing import Optional

from . import cnames
from .errors import SpecError, SpecErrors
from .harness import harness_rendering
from .ir import CheckedSpec
from .model import And, Not, Or, ParamRef, Pos
from .render import Renderer, verifier_rendering


def check_generated_names(checked: CheckedSpec, spec_file: Optional[str] = None,
                          emitted: Optional[list] = None) -> None:
    """Refuse a planned spec whose generated C would define one name twice, or define a
    name that is a macro of the headers it includes or a name of the runtime. `emitted`:
    the table entries (cfuncs.CFunction) of the header and of the source the emit pass
    made of `checked` (Renderer.emitted_entries; rendered here if not given)."""
    spec = checked.spec
    errors: list[SpecError] = []
    origins = _name_origins(checked)
    for kind, name, pos in origins["declared"]:
        if "__" in name:
            errors.append(SpecError(f"{kind} name '{name}' contains '__', which p2gen "
                                    f"reserves for the names it generates", pos, spec.source))
    if not errors:
        spec_file = spec_file or os.path.basename(spec.path)
        if emitted is None:
            renderer = Renderer(checked, spec_file)
            renderer.render()
            emitted = renderer.emitted_entries
        header, source = emitted
        runtime = cnames.runtime_definitions()
        runtime_names = {d.name for d in runtime}
        units = [[runtime, *(e.defines for e in header + source)],
                 [runtime, *(e.defines for e in header),
                  *(e.defines for e in verifier_rendering(checked, spec_file)[1].entries)],
                 [runtime, *(e.defines for e in header),
                  *(e.defines for e in harness_rendering(checked)[1].entries)]]
        reported = set()
        for d in sorted(cnames.collisions(units, cnames.system_macros(),
                                          cnames.system_declarations()),
                        key=lambda d: (d.ns, d.name)):
            who = _who_made(d, origins, checked.prefix)
            if not who:
                continue
            first = who[0]
            if d.name in cnames.system_macros():
                other = "a macro of the C headers the generated code includes"
            elif d.name in cnames.system_declarations():
                other = "a name the C headers the generated code includes declare"
            elif d.name in runtime_names:
                other = "a name of the p2gen runtime (p2_runtime.h)"
            elif len(who) > 1 and who[1][1] is not None:
                other = f"the C name of {who[1][0]}"
            else:
                other = "a name p2gen generates for every spec"
            key = (first[0], other)
            if key in reported:
                continue
            reported.add(key)
            errors.append(SpecError(f"{first[0]}: its generated C name '{d.name}' is also "
                                    f"{other}; choose another name", first[1], spec.source))
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise SpecErrors(errors)


def _name_origins(checked: CheckedSpec) -> dict:
    """What each spec declaration contributes to generated names: prefixed stems (for
    functions, types, tags and macros) and bare names (members and parameters)."""
    p = checked.prefix
    spec = checked.spec
    stems = [(p, f"the spec prefix '{p}' (from the file name, or --prefix)", None)]
    bare = []           # (namespace test, name, what, pos)
    declared = []
    for r in spec.records:
        stems.append((f"{p}_{r.name}", f"record '{r.name}'", r.pos))
        declared.append(("record", r.name, r.pos))
        for f in r.fields:
            bare.append((f"member:{p}_{r.name}", f.name, f"field '{f.name}' of record "
                         f"'{r.name}'", f.pos))
    for info in checked.containers:
        what = f"container '{info.name}'"
        stems.append((info.p, what, info.decl.pos))
        declared.append(("container", info.name, info.decl.pos))
        bare.append((f"member:{p}_db", info.name, what, info.decl.pos))
        bare.append((f"member:{p}_db", f"{info.name}_ready", what, info.decl.pos))
        for role in info.roles:
            rwhat = f"role '{role.name}' of container '{info.name}'"
            stems += [(role.p, rwhat, role.pos), (role.ip, rwhat, role.pos)]
    for cur in checked.cursors:
        what = f"cursor '{cur.name}'"
        stems.append((cur.p, what, cur.pos))
        declared.append(("cursor", cur.name, cur.pos))
        for name, _t in cur.params:
            ppos = _param_pos(cur.where, name) or cur.pos
            bare.append((f"param:{cur.p}_open", name, f"cursor '{cur.name}': parameter "
                         f"${name}", ppos))
    for ri in checked.relationships:
        declared.append(("relationship", ri.name, ri.decl.pos))
        for role in ri.roles:
            declared.append(("role", role.name, role.pos))
    return {"stems": stems, "bare": bare, "declared": declared}


def _param_pos(e, name: str) -> Optional[Pos]:
    if e is None:
        return None
    if isinstance(e, (And, Or)):
        return _param_pos(e.left, name) or _param_pos(e.right, name)
    if isinstance(e, Not):
        return _param_pos(e.operand, name)
    for side in (e.left, e.right):
        if isinstance(side, ParamRef) and side.name == name:
            return side.pos
    return None


def _who_made(d, origins: dict, prefix: str) -> list:
    """[(what, pos)] of the declarations that could have made definition `d`, the most
    specific first (distinct declarations only)."""
    out = []
    if d.ns.startswith(("member:", "param:")):
        for ns, name, what, pos in origins["bare"]:
            if name == d.name and (ns == d.ns or d.ns.startswith("param:")
                                   and ns.startswith("param:")):
                out.append((len(name) + 1000, what, pos))
    for stem, what, pos in origins["stems"]:
        if d.name == stem or d.name.startswith(stem + "_") \
                or d.name.upper().startswith(stem.upper() + "_"):
            out.append((len(stem), what, pos))
    out.sort(key=lambda x: -x[0])
    seen, result = set(), []
    for _n, what, pos in out:
        if what not in seen:
            seen.add(what)
            result.append((what, pos))
    return result
