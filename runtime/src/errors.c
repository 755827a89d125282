/* ==========================================================================
 * 2. Errors
 * ========================================================================== */

const char *p2_strerror(int code)
{
    switch (code) {
#define P2_STRERROR_CASE_(name, value, message) case name: return #name ": " message;
    P2_ERROR_LIST(P2_STRERROR_CASE_)
#undef P2_STRERROR_CASE_
    default: return "unknown error";
    }
}

static int err_vset(p2_err *e, int code, const char *prefix, const char *fmt, va_list ap)
{
    if (e == NULL)
        return code;
    e->code = code;
    size_t n = 0;
    if (prefix != NULL) {
        int k = snprintf(e->msg, sizeof e->msg, "%s: ", prefix);
        n = k < 0 ? 0 : (size_t)k;
        if (n >= sizeof e->msg)
            return code; /* prefix alone filled the buffer (truncated, NUL-terminated) */
    }
    if (fmt != NULL)
        vsnprintf(e->msg + n, sizeof e->msg - n, fmt, ap);
    else
        snprintf(e->msg + n, sizeof e->msg - n, "%s", p2_strerror(code));
    return code;
}

int (p2_err_set)(p2_err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(e, code, NULL, fmt, ap);
    va_end(ap);
    return code;
}

void p2_err_clear(p2_err *e)
{
    if (e != NULL) {
        e->code = P2_OK;
        e->msg[0] = '\0';
    }
}
