/* SPDX-License-Identifier: MIT */
/*
 * HTML text: the one escape every byte that mcplex writes into an HTML or
 * SVG document goes through (the status page's server-side rendering, the
 * bench report). Upstream-controlled strings (tool names, error text) are
 * shown as characters, never as markup.
 */
#ifndef MX_HTML_H
#define MX_HTML_H
#include <stddef.h>
#include "buf.h"
/*
 * Append |len| bytes of |p| to |b| as HTML text, fit for element content
 * and for a double- or single-quoted attribute value: & < > " ' become
 * &amp; &lt; &gt; &quot; &#39;, and a control byte other than TAB, LF and
 * CR becomes U+FFFD (HTML forbids them in text). Other bytes go as they are.
 * Returns 0 or MX_ELIMIT (|b|'s cap; what was appended stays).
 */
int mx_html_escape(struct mx_buf *b, const char *p, size_t len);
/* The same for a NUL-terminated |s| (NULL appends nothing). */
int mx_html_escape_cstr(struct mx_buf *b, const char *s);
#endif
