"""LabFlow-1 (Bonner, Shrufi, Rozen, EDBT 1996): a laboratory's workflow history on
generated data managers. `gen.py` is the seeded simulation that writes the benchmark log
(`p2gen bench labflow --gen`; its docstring documents the log format), `model.py` the
Python reference model that replays a log and answers its queries, the oracle the
replays on generated variants and peers are checked against."""
