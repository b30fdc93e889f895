/* SPDX-License-Identifier: MIT */
/*
 * The guard's header checks on arbitrary bytes: mx_guard_header_value_ok
 * refuses exactly the values with a control byte other than HTAB (what
 * would let an upstream or a client write header lines of its own), and
 * mx_rev_accepts (an Accept list parser) never says yes to a value
 * that does not name text/event-stream itself.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#include "guard.h"
#include "revision.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool names_sse(const uint8_t *p, size_t n)
{
    static const char want[] = "text/event-stream";
    size_t wl = sizeof(want) - 1;
    for (size_t i = 0; i + wl <= n; i++) {
        if (strncasecmp((const char *)p + i, want, wl) == 0)
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mx_str in = mx_str_make((const char *)data, size);
    bool clean = true;
    for (size_t i = 0; i < size; i++) {
        if ((data[i] < 0x20 && data[i] != '\t') || data[i] == 0x7f)
            clean = false;
    }
    MX_ASSERT(mx_guard_header_value_ok(in) == clean);
    if (mx_rev_accepts(&in, "text/event-stream", false))
        MX_ASSERT(names_sse(data, size));
    return 0;
}
