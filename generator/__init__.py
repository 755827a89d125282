"""p2gen: compile P2-style type equations into specialised C data managers.

The compiler is a pipeline of passes, one module each; every pass reads the previous
pass's output and changes nothing it was given:

    parser.py   spec text -> model.Spec            (ANTLR grammar in grammar/)
    check.py    model.Spec -> ir.CheckedSpec       (names, types, realms, layer parameters)
    plan.py     CheckedSpec -> planned copy        (an access path per cursor and find)
    render.py   planned spec -> <prefix>.h, .c     (emit; Jinja2: templates/, p2gen.layers)
    names.py    the emit pass's table -> refused or not  (names defined twice, or clashing)
    build.py    the passes in that order, then write and compile (build.emit_spec)

toolchain.py is the toolbox under all of them (the compiler command, the runtime's files
and its cached object, the user's cache, atomic writes): no pass imports build.py, and a
test (tests/compiler/test_import_graph.py) fails on any import cycle in the package.

Beside the pipeline: cli.py (the command line), cfuncs.py (the table of what the templates
emit, which pruning, the API marking, the CFFI declarations and the names pass read),
cnames.py (the names the included headers define, as lists made from the compiler, and
where two definitions meet), harness.py / verify.py / recover.py (generated programs that
drive, check and repair a spec's files), pybind.py (`--python`: the CFFI extension and
the module users import). Elsewhere in the package: p2gen.layers (one signature and one
C template per layer), p2gen.runtime (the hand-written C every output links, and pyapi,
the Python library generated modules import), p2gen.bench (the benchmarks behind
`p2gen bench`), p2gen.type_equations (example and benchmark specs).
"""
