-- SPDX-License-Identifier: MIT
-- wrk script: tools/call echo in one MCP session (MX_SESSION), a distinct
-- JSON-RPC id per request, every answer checked (200 and a "result");
-- MX_BEARER, when set, is sent as the bearer credential.
-- done() prints one JSON line; wrk's own latency percentiles are corrected
-- for coordinated omission, so the suite takes latency from `mcplex bench`
-- and only throughput and errors from here.
local threads = {}
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("id", counter * 1000000000)
    table.insert(threads, thread)
end

function init(args)
    bad = 0
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    wrk.headers["Accept"] = "application/json, text/event-stream"
    wrk.headers["Mcp-Session-Id"] = os.getenv("MX_SESSION")
    wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
    -- the upstream's credential when going direct, from the environment
    local bearer = os.getenv("MX_BEARER")
    if bearer and bearer ~= "" then
        wrk.headers["Authorization"] = "Bearer " .. bearer
    end
end

function request()
    id = id + 1
    return wrk.format(nil, nil, nil,
        '{"jsonrpc":"2.0","id":' .. id ..
        ',"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}')
end

function response(status, headers, body)
    if status ~= 200 or not string.find(body, '"result"', 1, true) then
        bad = bad + 1
    end
end

function done(summary, latency, requests)
    local b = 0
    for _, t in ipairs(threads) do
        b = b + t:get("bad")
    end
    local e = summary.errors
    io.write(string.format(
        '{"requests":%d,"bad":%d,"socket_errors":%d,"duration_us":%d,"co_p50_us":%d,"co_p99_us":%d}\n',
        summary.requests, b, e.connect + e.read + e.write + e.timeout + e.status,
        summary.duration, latency:percentile(50), latency:percentile(99)))
end
