"""The runtime: what generated code links or imports, written by hand.

p2_runtime.h / p2_runtime.c   copied next to every generated .c: return codes (one table,
                              P2_ERROR_LIST), CRC-32, the persistent segment (file format,
                              allocator), the page journal, integrity checks
codes.py                      the return codes as Python reads them from P2_ERROR_LIST
pyapi/                        the Python library every generated module imports, one
                              module per part (its __init__ names them and re-exports
                              every name; p2gen build --wheel copies it, codes.py and
                              p2_runtime.h into the wheel's package: generator/package.py)
"""
