"""<prefix>_close frees the handle whatever it returns, so the message of a failed close
cannot be read from the handle afterwards (a CHECK macro printing <prefix>_errmsg(db) after
it read freed memory). What a C caller has instead, compiled here under ASan and UBSan
with the runtime's fault injection (-DP2_FAULT_INJECT: P2_FAULT=msync:1- makes the close's
flush fail):

- <prefix>_close(db) returns the code, whose text p2_strerror(rc) gives (static);
- <prefix>_close_msg(db, msg, size) returns the same code and writes the message the
  handle held into the caller's buffer before freeing it ("" on success, cut short to
  the buffer, NULL with size 0 allowed), through the library and inline (<PREFIX>_INLINE).
"""
from __future__ import annotations

import subprocess

import pytest

from conftest import build_san_program
from p2gen.build import generate

SPEC = """record item { id: u32; v: i64; }
container items of item = top2ds_qualify[hash[array[persistent]]]
    with hash(key = id), persistent(file = "cm.db");
"""

PROGRAM = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cm.h"

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #x); exit(3); } } while (0)

static cm_db *opened(const char *dir)
{
    cm_db *db;
    unsetenv("P2_FAULT");
    CHECK(cm_open(&db, dir) == P2_OK);
    cm_item it = { .id = 1, .v = 2 };
    cm_ref ref;
    CHECK(cm_items_insert(db, &it, &ref) == P2_OK);
    return db;
}

int main(int argc, char **argv)
{
    char path[4096], msg[P2_ERR_MSG_SIZE];
    CHECK(argc == 2);
    /* a failed close: the code, and its message in the caller's buffer */
    snprintf(path, sizeof path, "%s/a", argv[1]);
    cm_db *db = opened(path);
    setenv("P2_FAULT", "msync:1-", 1);
    memset(msg, 'x', sizeof msg);
    int rc = cm_close_msg(db, msg, sizeof msg);
    printf("close_msg %d [%s] %s\n", rc, p2_strerror(rc), msg);
    /* the same through plain close: the code and its static text */
    snprintf(path, sizeof path, "%s/b", argv[1]);
    db = opened(path);
    setenv("P2_FAULT", "msync:1-", 1);
    rc = cm_close(db);
    printf("close %d [%s]\n", rc, p2_strerror(rc));
    /* a buffer too small: cut short, NUL-terminated */
    snprintf(path, sizeof path, "%s/c", argv[1]);
    db = opened(path);
    setenv("P2_FAULT", "msync:1-", 1);
    char small[8];
    memset(small, 'x', sizeof small);
    rc = cm_close_msg(db, small, sizeof small);
    printf("small %d %zu\n", rc, strlen(small));
    /* a close that succeeds: "" */
    snprintf(path, sizeof path, "%s/d", argv[1]);
    db = opened(path);
    unsetenv("P2_FAULT");
    memset(msg, 'x', sizeof msg);
    rc = cm_close_msg(db, msg, sizeof msg);
    printf("ok %d [%s]\n", rc, msg);
    /* NULL handle, NULL buffer */
    memset(msg, 'x', sizeof msg);
    printf("null %d %d [%s]\n", cm_close(NULL), cm_close_msg(NULL, msg, sizeof msg), msg);
    snprintf(path, sizeof path, "%s/e", argv[1]);
    db = opened(path);
    printf("nobuf %d\n", cm_close_msg(db, NULL, 0));
    return 0;
}
"""


@pytest.mark.parametrize("inline", [False, True], ids=["library", "inline"])
def test_close_gives_its_message_without_the_handle(tmp_path, cc, san_env, inline):
    spec = tmp_path / "cm.p2"
    spec.write_text(SPEC)
    gen = generate(str(spec), str(tmp_path / "gen"))
    src = tmp_path / "main.c"
    src.write_text(PROGRAM)
    # inline: the API defined by the header itself, the spec's .c not linked
    exe = build_san_program(cc, tmp_path / "main", [src] + ([] if inline else [gen.source]),
                            gen.out_dir, ("-DP2_FAULT_INJECT",),
                            ["-DCM_INLINE"] if inline else [])
    data = tmp_path / "data"
    for d in "abcde":
        (data / d).mkdir(parents=True)
    proc = subprocess.run([str(exe), str(data)], capture_output=True, text=True,
                          env=san_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    eio = "6 [P2_EIO: input/output error]"
    assert lines["close_msg"].startswith(eio + " "), lines
    message = lines["close_msg"][len(eio) + 1:]
    assert "cm.db" in message and len(message) > 20, message   # names the file, says why
    assert lines["close"] == eio
    assert lines["small"] == "6 7"
    assert lines["ok"] == "0 []"
    assert lines["null"] == "0 0 []"
    assert lines["nobuf"] == "0"
