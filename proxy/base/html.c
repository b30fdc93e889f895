/* SPDX-License-Identifier: MIT */
/* HTML text escaping (html.h). */
#include <string.h>

#include "html.h"

int mx_html_escape(struct mx_buf *b, const char *p, size_t len)
{
    size_t run = 0; /* bytes before p[i] not yet appended */
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0; i++) {
        unsigned char c = (unsigned char)p[i];
        const char *rep = NULL;
        switch (c) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&#39;";
            break;
        default:
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
                rep = "\xef\xbf\xbd"; /* U+FFFD */
            break;
        }
        if (rep == NULL) {
            run++;
            continue;
        }
        rc = mx_buf_append(b, p + i - run, run);
        if (rc == 0)
            rc = mx_buf_append_str(b, rep);
        run = 0;
    }
    if (rc == 0 && run)
        rc = mx_buf_append(b, p + len - run, run);
    return rc;
}

int mx_html_escape_cstr(struct mx_buf *b, const char *s)
{
    return s ? mx_html_escape(b, s, strlen(s)) : 0;
}
