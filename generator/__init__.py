"""p2gen: compile P2-style type equations into specialised C data managers.

The compiler is a pipeline of passes, one module each; every pass reads the previous
pass's output and changes nothing it was given:

    parser.py   spec text -> model.Spec            (ANTLR grammar in grammar/)
    check.py    model.Spec -> ir.CheckedSpec       (names, types, realms, layer parameters)
    plan.py     CheckedSpec -> planned copy        (an access path per cursor and find)
    render.py   planned spec -> <prefix>.h, .c     (Jinja2: templates/ and p2gen.layers)
    build.py    the passes as one call; the C compiler

Beside the pipeline: cli.py (the command line), cnames.py (names the generated C
defines, for the checker), harness.py / verify.py / recover.py (generated programs that
drive, check and repair a spec's files), pybind.py (`--python`: the CFFI extension and
the module users import). Elsewhere in the package: p2gen.layers (one signature and one
C template per layer), p2gen.runtime (the hand-written C every output links, and pyapi,
the Python library generated modules import), p2gen.bench (the benchmarks behind
`p2gen bench`), p2gen.type_equations (example and benchmark specs).
"""
