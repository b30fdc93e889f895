/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: bytes through the TOML-subset parser and then the config
 * model. Besides memory errors it checks that the two agree (a model never
 * accepts what the parser rejects) and that every syntax error has a
 * position inside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_lines(const uint8_t *data, size_t size)
{
    int n = 1;
    for (size_t i = 0; i < size; i++)
        n += data[i] == '\n';
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mx_toml_table *t = NULL;
    struct mx_config *cfg = NULL;
    struct mx_diag d;
    const char *text = (const char *)data;

    memset(&d, 0, sizeof(d));
    int trc = mx_toml_parse("fuzz.toml", text, size, &t, &d);
    if (trc == 0) {
        mx_toml_free(t);
    } else if (size <= MX_TOML_MAX_INPUT &&
               (d.line < 1 || d.line > count_lines(data, size) || d.col < 1)) {
        abort();
    }
    int crc = mx_config_parse("fuzz.toml", text, size, &cfg, &d);
    if (trc != 0 && crc == 0)
        abort();
    if (crc == 0) {
        for (size_t i = 0; i < cfg->server_cnt; i++) {
            if (mx_config_server(cfg, cfg->servers[i].name) != &cfg->servers[i])
                abort();
        }
        mx_config_free(cfg);
    }
    return 0;
}
