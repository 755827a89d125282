// app.cc: the same data manager from C++ -- list the accounts holding at least 100
#include <cstdio>
#include "bank.h"

int main()
{
    bank_db *db = nullptr;
    if (bank_open(&db, ".") != P2_OK) {
        std::fprintf(stderr, "%s\n", bank_errmsg(db));
        bank_close(db);
        return 1;
    }
    bank_rich_cursor k;
    bank_rich_open(db, &k, /* $min */ 100);
    for (const bank_account *a; (a = bank_rich_next_rec(&k)) != nullptr;)
        std::printf("%s %lld\n", a->owner, static_cast<long long>(a->balance));
    char msg[P2_ERR_MSG_SIZE];
    if (bank_close_msg(db, msg, sizeof msg) != P2_OK) {   // db is freed: the message is in msg
        std::fprintf(stderr, "%s\n", msg);
        return 1;
    }
    return 0;
}
