"""Clustered vs segregated allocation in the OO7 equations, by addresses, not time.

type_equations/oo7/hash_ilist_clustered_persistent.p2 stores composite parts, documents,
atomic parts and connections with `malloc` storage: each element is one block of the file's
allocator, taken in the order the application creates them, so a composite part's atomic
parts and connections lie together. hash_ilist_persistent.p2 stores them with `array`:
one slot array per container, so the same objects are segregated by type, each composite's
atomic parts in one region and its connections in another.

A small C program, built against each equation's generated API with -Werror and the
sanitizers, creates composite parts as the OO7 generator does (bench/oo7/oo7_common.cc,
build_composite: the composite, its document and text, its atomic parts, then three
connections per atomic part) after reserving room as the benchmark driver does, then
prints, per composite, the span of addresses of its atomic parts and connections and how
many distinct pages they touch. Clustered, every composite's span is about its own bytes;
segregated, it covers the whole atomic-part region at least.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import build_san_program
from p2gen.build import generate

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "type_equations" / "oo7"
PAGE = 4096
COMPS, ATOMS, CONNS = 64, 20, 3          # composites, atomic parts each, connections per part
TEXT = 2000                              # document text bytes (OO7 small)

DRIVER = r"""
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "PFX.c"   /* the element types (sizes) are the implementation's */

#define COMPS NCOMPS
#define ATOMS NATOMS
#define CONNS NCONNS
#define PAGE 4096u

static void ok(int rc, PFX_db *db, const char *what)
{
    if (rc != P2_OK) {
        fprintf(stderr, "%s: %s\n", what, PFX_errmsg(db));
        exit(1);
    }
}

static uintptr_t addr(const void *p) { return (uintptr_t)p; }

static int cmp_u(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    PFX_db *db = NULL;
    static char text[NTEXT];
    static PFX_ref comps[COMPS], atoms[COMPS][ATOMS], conns[COMPS][ATOMS * CONNS];
    uint32_t rng = 12345;
    if (argc != 2) return 2;
    memset(text, 'x', sizeof text);
    ok(PFX_open(&db, argv[1]), db, "open");
    /* room for everything first, as the benchmark driver does */
    ok(PFX_composite_parts_reserve(db, COMPS), db, "reserve");
    ok(PFX_documents_reserve(db, COMPS), db, "reserve");
    ok(PFX_atomic_parts_reserve(db, COMPS * ATOMS), db, "reserve");
    ok(PFX_connections_reserve(db, COMPS * ATOMS * CONNS), db, "reserve");
    for (int c = 0; c < COMPS; c++) {
        PFX_composite_part cp;
        PFX_document d;
        PFX_ref doc;
        memset(&cp, 0, sizeof cp);
        cp.id = c + 1;
        cp.root_part = UPFX_NOREF;
        ok(PFX_composite_parts_insert(db, &cp, &comps[c]), db, "insert composite");
        memset(&d, 0, sizeof d);
        d.id = c + 1;
        snprintf(d.title, sizeof d.title, "Composite Part %08d", c + 1);
        ok(PFX_documents_insert(db, &d, &doc), db, "insert document");
        ok(PFX_documents_set_text(db, doc, text, sizeof text), db, "text");
        ok(PFX_composite_parts_set_documentation(db, comps[c], doc), db, "documentation");
        for (int i = 0; i < ATOMS; i++) {
            PFX_atomic_part a;
            memset(&a, 0, sizeof a);
            a.id = c * ATOMS + i + 1;
            ok(PFX_atomic_parts_insert(db, &a, &atoms[c][i]), db, "insert atomic part");
            ok(PFX_atomic_parts_set_part_of(db, atoms[c][i], comps[c]), db, "partOf");
            if (i == 0) ok(PFX_composite_parts_set_root_part(db, comps[c], atoms[c][i]), db, "rootPart");
        }
        for (int i = 0; i < ATOMS; i++)
            for (int j = 0; j < CONNS; j++) {
                PFX_connection k;
                PFX_ref r;
                int to;
                rng = rng * 1103515245u + 12345u;
                to = j == 0 ? (i + 1) % ATOMS : (int)((rng >> 16) % ATOMS);
                memset(&k, 0, sizeof k);
                k.length = i * CONNS + j;
                ok(PFX_connections_insert(db, &k, &r), db, "insert connection");
                ok(PFX_connections_set_from(db, r, atoms[c][i]), db, "from");
                ok(PFX_connections_set_to(db, r, atoms[c][to]), db, "to");
                conns[c][i * CONNS + j] = r;
            }
    }
    /* addresses once everything is in (no block moves after this) */
    for (int c = 0; c < COMPS; c++) {
        uintptr_t a[ATOMS + ATOMS * CONNS];
        int n = 0, pages = 1;
        for (int i = 0; i < ATOMS; i++) a[n++] = addr(PFX_atomic_parts_at(db, atoms[c][i]));
        for (int i = 0; i < ATOMS * CONNS; i++) a[n++] = addr(PFX_connections_at(db, conns[c][i]));
        qsort(a, (size_t)n, sizeof a[0], cmp_u);
        for (int i = 1; i < n; i++) pages += a[i] / PAGE != a[i - 1] / PAGE;
        printf("%d %" PRIuPTR " %d\n", c, a[n - 1] - a[0], pages);
    }
    printf("sizes %zu %zu\n", sizeof(PFX_atomic_parts_elem), sizeof(PFX_connections_elem));
    ok(PFX_close(db), db, "close");
    return 0;
}
"""


def _layout(stem: str, tmp_path: Path, cc: str, san_env) -> tuple[list[tuple[int, int]], tuple[int, int]]:
    """Build the driver against the equation `stem`, run it; per composite (span in bytes,
    distinct pages) of its atomic parts and connections, and the sizes of an atomic-part and
    a connection element."""
    out = tmp_path / stem
    out.mkdir()
    prefix = "cl_" + stem
    generate(str(SPECS / f"{stem}.p2"), str(out), prefix)
    src = (DRIVER.replace("UPFX", prefix.upper()).replace("PFX", prefix).replace("NCOMPS", str(COMPS))
           .replace("NATOMS", str(ATOMS)).replace("NCONNS", str(CONNS))
           .replace("NTEXT", str(TEXT)))
    (out / "layout.c").write_text(src)
    exe = out / "layout"
    build_san_program(cc, exe, [out / "layout.c"], include_dir=out, libs=("-lm",))
    db = tmp_path / (stem + "_db")
    db.mkdir()
    r = subprocess.run([str(exe), str(db)], capture_output=True, text=True, env=san_env)
    assert r.returncode == 0, r.stderr
    rows, sizes = [], None
    for line in r.stdout.splitlines():
        f = line.split()
        if f[0] == "sizes":
            sizes = (int(f[1]), int(f[2]))
        else:
            rows.append((int(f[1]), int(f[2])))
    assert len(rows) == COMPS and sizes
    return rows, sizes


def _block(n: int) -> int:
    """The file allocator's block for n bytes (power-of-two classes from 16)."""
    b = 16
    while b < n:
        b *= 2
    return b


def test_clustered_allocation_keeps_a_composite_together(tmp_path, cc, san_env):
    clustered, (atom, conn) = _layout("hash_ilist_clustered_persistent", tmp_path, cc, san_env)
    segregated, (s_atom, _) = _layout("hash_ilist_persistent", tmp_path, cc, san_env)
    own = ATOMS * _block(atom) + ATOMS * CONNS * _block(conn)
    bound = own + 2 * PAGE          # its own bytes, and the ends of the chunks it shares
    for c, (span, pages) in enumerate(clustered):
        assert span <= bound, f"composite {c}: clustered span {span} > {bound}"
        assert pages <= bound // PAGE + 1
    # segregated: atomic parts in one slot array, connections in another after it, so
    # every composite's objects span at least the atomic-part region (COMPS * ATOMS slots)
    region = COMPS * ATOMS * s_atom
    for c, (span, _pages) in enumerate(segregated):
        assert span >= region, f"composite {c}: segregated span {span} < {region}"
    assert min(s for s, _ in segregated) > 4 * max(s for s, _ in clustered)
