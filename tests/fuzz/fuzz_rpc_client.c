/* SPDX-License-Identifier: MIT */
/*
 * A message arriving from a client at /mcp: arbitrary bytes as the body of
 * a POST in an open session, through the real router (parse with duplicate
 * keys refused, classify, session checks, the method table, the merged
 * lists and cursors, routing by name and URI, the id map, answers to
 * requests the client never got). Never crashes; every JSON answer is one
 * JSON-RPC message; once the request is over no call is left in the id map.
 */
#include <stddef.h>
#include <stdint.h>

#include "rpc_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    world_fuzz_post(data, size);
    return 0;
}
