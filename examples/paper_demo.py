"""The same data manager from Python: p2gen build type_equations/paper.p2 -o generated --python"""
import sys
import tempfile

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "generated")
import paper  # noqa: E402  (the module p2gen generated)

with tempfile.TemporaryDirectory() as d:
    with paper.open(d) as db:
        for i in range(100):
            db.hash_accounts.insert(id=i, branch=i % 4, balance=10 * i, filler=f"acct {i}")
        acc = db.hash_accounts.find(42)
        print("found", acc)
        db.hash_accounts.update(acc, balance=acc.balance + 1)
        rich = [a.id for a in db.rich_in_branch(b=1, min=500)]
        print("rich in branch 1:", rich)
        print("accounts:", len(db.hash_accounts))
    with paper.open(d) as db:  # the file keeps everything
        print("after reopen:", len(db.hash_accounts), "accounts; 42 has", db.hash_accounts.find(42).balance)
