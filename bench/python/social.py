"""The social-graph workload of `p2gen bench python`: the feed from Python.

The spec bench/python/social_py.p2 (users; follows, M:N; posts, 1:N kept newest first per
user: `relationship wrote one users.posts order by time desc to many posts.author`) is
driven beside stdlib sqlite3 (tables users, follows, posts with an index on
posts(user, time); :memory: and a file), on the same rows and queries:

    P2            `db.users.posts.feed(followees, k)`: the merge of the followees' ordered
                  roles in C, Records back; `db.users.posts(u)` walked k rows
    sqlite-mem    SELECT p.id, p.time FROM follows f JOIN posts p ON p.user = f.followee
                  WHERE f.follower = ? ORDER BY p.time DESC LIMIT ?  (fetchall)
    sqlite-file   the same on a file

Data (seeded, the same for every system): U users, F distinct random followees each, P
posts per user on average, each post by a random user, times increasing in insertion
order (distinct). Operations (one phase each, on a fresh database each repetition):
social_load (every user, follow and post, per object), social_feed (the k newest posts of
the users one follows, for random users, per feed), social_posts (one user's k newest
posts, per query). Each phase's answer is checked against a reference computed here with
sorted lists (row counts and a checksum of ids): a wrong one fails the run.
"""
from __future__ import annotations

import heapq
import os
import random
from pathlib import Path

from .base import SqliteBase

SPEC = Path(__file__).resolve().parent / "social_py.p2"
PREFIX = "p2bench_social"
PHASES = ("social_load", "social_feed", "social_posts")
OPERATIONS = PHASES
SYSTEMS = ("P2", "sqlite-mem", "sqlite-file")
TITLE = "social"   # as run.py names the workload
SIZES = {"tiny": (200, 10, 5), "small": (2000, 50, 20), "medium": (10000, 50, 50)}   # users, follows, posts/user
DEFAULT_SIZE = "small"
K = 10

OP_DOC = {
    "social_load": "every user, follow and post (per object)",
    "social_feed": f"the feed: the {K} newest posts of the users one follows, newest first "
                   f"(per feed; P2: `users.posts.feed(followees, {K})`, SQLite: the join "
                   f"ORDER BY time DESC LIMIT {K} over an index on posts(user, time))",
    "social_posts": f"one user's {K} newest posts (per query)",
}


class SocialWorkload:
    def __init__(self, size: str = DEFAULT_SIZE, seed: int = 11, queries: int = 2000):
        users, follows, per = SIZES[size]
        self.size, self.users, self.follows = size, users, follows
        rnd = random.Random(seed)
        self.followees = [rnd.sample([x for x in range(users) if x != u], follows)
                          if follows < users else [] for u in range(users)]
        self.author = [rnd.randrange(users) for _ in range(users * per)]
        self.rows = len(self.author)
        self.objects = users + users * follows + self.rows
        self.queries = [rnd.randrange(users) for _ in range(queries)]
        # the reference: each user's posts newest first (time = 1000 + id), merged by heapq
        mine = [[] for _ in range(users)]
        for pid, a in enumerate(self.author):
            mine[a].append(pid)
        for v in mine:
            v.reverse()
        feed_sum = posts_sum = 0
        for u in self.queries:
            top = heapq.nsmallest(K, [(-(1000 + p), p) for f in self.followees[u] for p in mine[f][:K]])
            feed_sum += len(top) * 1_000_003 + sum(p for _, p in top)
            posts_sum += min(K, len(mine[u])) * 1_000_003 + sum(mine[u][:K])
        self.expected = {"social_load": self.objects, "social_feed": feed_sum,
                         "social_posts": posts_sum}

    def params(self) -> dict:
        return {"size": self.size, "users": self.users, "followees_per_user": self.follows,
                "posts": self.rows, "queries": len(self.queries), "k": K}


def _digest(ids) -> int:
    return len(ids) * 1_000_003 + sum(ids)


class P2Social:
    name = "P2"

    def __init__(self, module, tmp: str):
        self.mod = module
        self.tmp = tmp

    def open(self, w):
        self.db = self.mod.open(self.tmp)

    def close(self):
        self.db.close()

    def link(self, w):
        pass

    def social_load(self, w):
        db = self.db
        ins_u, ins_p = db.users.insert, db.posts.insert
        follow, author = db.users.followees.add, db.posts.author.set
        refs = [ins_u(id=u).ref for u in range(w.users)]
        for u, fs in enumerate(w.followees):
            for f in fs:
                follow(refs[u], refs[f])
        for pid, a in enumerate(w.author):
            author(ins_p(id=pid, time=1000 + pid).ref, refs[a])
        self.urefs = refs
        return w.objects, len(db.users) + sum(len(f) for f in w.followees) + len(db.posts)

    def social_feed(self, w):
        db = self.db
        find, followees, feed = db.users.find, db.users.followees.refs, db.users.posts.feed
        s = 0
        for u in w.queries:
            rows = feed(list(followees(find(u))), K)
            s += _digest([r.id for r in rows])
        return len(w.queries), s

    def social_posts(self, w):
        db = self.db
        find, top = db.users.find, db.users.posts.feed   # the top k of one owner's role
        s = 0
        for u in w.queries:
            s += _digest([r.id for r in top([find(u)], K)])
        return len(w.queries), s


class SqliteSocial(SqliteBase):
    def open(self, w):
        ex = self.connect().execute
        ex("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        ex("CREATE TABLE follows (follower INTEGER, followee INTEGER, "
           "PRIMARY KEY (follower, followee)) WITHOUT ROWID")
        ex("CREATE TABLE posts (id INTEGER PRIMARY KEY, user INTEGER, time INTEGER, "
           "likes INTEGER)")
        ex("CREATE INDEX posts_user_time ON posts(user, time)")
        self.conn.commit()
        self.cur = self.conn.cursor()

    def link(self, w):
        pass

    def social_load(self, w):
        ex = self.cur.execute
        for u in range(w.users):
            ex("INSERT INTO users VALUES (?, '')", (u,))
        for u, fs in enumerate(w.followees):
            for f in fs:
                ex("INSERT INTO follows VALUES (?, ?)", (u, f))
        for pid, a in enumerate(w.author):
            ex("INSERT INTO posts VALUES (?, ?, ?, 0)", (pid, a, 1000 + pid))
        self.conn.commit()
        ex("ANALYZE")
        n = sum(ex(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("users", "follows", "posts"))
        return w.objects, n

    def social_feed(self, w):
        ex = self.cur.execute
        s = 0
        for u in w.queries:
            rows = ex("SELECT p.id, p.time FROM follows f JOIN posts p ON p.user = f.followee "
                      "WHERE f.follower = ? ORDER BY p.time DESC LIMIT ?", (u, K)).fetchall()
            s += _digest([r[0] for r in rows])
        return len(w.queries), s

    def social_posts(self, w):
        ex = self.cur.execute
        s = 0
        for u in w.queries:
            rows = ex("SELECT id, time FROM posts WHERE user = ? ORDER BY time DESC LIMIT ?",
                      (u, K)).fetchall()
            s += _digest([r[0] for r in rows])
        return len(w.queries), s


def make_systems(module, tmp: str, only=None) -> list:
    os.makedirs(os.path.join(tmp, "p2social"), exist_ok=True)
    systems = [P2Social(module, os.path.join(tmp, "p2social")), SqliteSocial(":memory:"),
               SqliteSocial(os.path.join(tmp, "social.sqlite"))]
    if only:
        systems = [s for s in systems if s.name in only]
    return systems
