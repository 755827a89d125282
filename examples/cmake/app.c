/* app.c: deposit 100 into account 1, opening it on the first run */
#include <stdio.h>
#include "bank.h"

int main(void)
{
    bank_db *db;
    if (bank_open(&db, ".") != P2_OK) {        /* bank.db in this directory */
        fprintf(stderr, "%s\n", bank_errmsg(db));
        bank_close(db);
        return 1;
    }
    bank_ref ref;
    if (bank_accounts_find_id(db, 1, &ref) == P2_NOTFOUND) {
        bank_account ada = { .id = 1, .owner = "ada", .balance = 0 };
        bank_accounts_insert(db, &ada, &ref);
    }
    const bank_account *a = bank_accounts_at(db, ref);
    bank_accounts_set_balance(db, ref, a->balance + 100);
    if (bank_commit(db) != P2_OK)              /* durable once it returns P2_OK */
        fprintf(stderr, "%s\n", bank_errmsg(db));
    printf("%s has %lld\n", a->owner, (long long)a->balance);
    int rc = bank_close(db);                   /* frees db: report rc, not bank_errmsg(db) */
    if (rc != P2_OK) fprintf(stderr, "%s\n", p2_strerror(rc));
    return rc != P2_OK;
}
