/* SPDX-License-Identifier: MIT */
/*
 * A JSON-RPC batch from a client at /mcp (MCP 2025-03-26): arbitrary bytes
 * as the body of a POST in a session negotiated at 2025-03-26, through the
 * real router, so every array becomes a batch of elements served one by one
 * (requests, notifications, responses, invalid elements, too many of them).
 * Never crashes; a JSON answer is one JSON-RPC message; once the request is
 * over (answered, or the client went away) no batch and no call is left.
 */
#include <stddef.h>
#include <stdint.h>

#define WORLD_VERSION "2025-03-26"
#include "batch.h"
#include "rpc_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    world_fuzz_post(data, size);
    MX_ASSERT(mx_batch_live_cnt() == 0);
    return 0;
}
