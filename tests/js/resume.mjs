// SPDX-License-Identifier: MIT
//
// A Streamable HTTP client that reads an SSE answer event by event, for the
// resumable streams of mcplex (MCP 2025-03-26, Resumability and Redelivery),
// with fetch alone so that every event id is seen:
//
//   node resume.mjs call <url> <tool> <arguments-json>
//       initialize (2025-11-25), then POST tools/call with a progressToken;
//       prints one JSON line per line of output, as it comes:
//         {"session": "<id>"}
//         {"id": "<event id>", "data": <message or null for a priming event>}
//       and ends after the answer ({"done": true}); the test may kill it
//       any time before.
//   node resume.mjs resume <url> <session> <last-event-id>
//       GET with Last-Event-ID; prints the same lines until the answer, or
//       {"status": <code>, "body": <text>} when the GET is refused.
//
// Everything is on 127.0.0.1; each read is bounded by 20 s.

const [mode, url, a1, a2] = process.argv.slice(2);
const deadline = setTimeout(() => {
    out({ error: "timed out" });
    process.exit(3);
}, 20000);

function out(obj) {
    process.stdout.write(JSON.stringify(obj) + "\n");
}

const base = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
};

// Reads the SSE body of |res|, printing each event; resolves when the
// answer (a message with id 2) came or the stream ended.
async function readEvents(res) {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of res.body) {
        buf += dec.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let id = null;
            const data = [];
            for (const line of block.split("\n")) {
                if (line.startsWith("id:")) id = line.slice(3).trim();
                else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
            }
            if (id === null && data.length === 0) continue; // a comment
            const text = data.join("\n");
            const msg = text.trim() === "" ? null : JSON.parse(text);
            out({ id, data: msg });
            if (msg && msg.id === 2 && ("result" in msg || "error" in msg)) return true;
        }
    }
    return false;
}

async function call() {
    const init = await fetch(url, {
        method: "POST",
        headers: base,
        body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: {
                protocolVersion: "2025-11-25",
                capabilities: {},
                clientInfo: { name: "resume", version: "1" },
            },
        }),
    });
    const session = init.headers.get("mcp-session-id");
    await init.text();
    out({ session });
    const hdrs = { ...base, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25" };
    await (
        await fetch(url, {
            method: "POST",
            headers: hdrs,
            body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        })
    ).text();
    const res = await fetch(url, {
        method: "POST",
        headers: hdrs,
        body: JSON.stringify({
            jsonrpc: "2.0",
            id: 2,
            method: "tools/call",
            params: { name: a1, arguments: JSON.parse(a2), _meta: { progressToken: "p" } },
        }),
    });
    out({ status: res.status, type: res.headers.get("content-type") });
    if (await readEvents(res)) out({ done: true });
}

async function resume() {
    const res = await fetch(url, {
        method: "GET",
        headers: {
            Accept: "text/event-stream",
            "Mcp-Session-Id": a1,
            "MCP-Protocol-Version": "2025-11-25",
            "Last-Event-ID": a2,
        },
    });
    if (res.status !== 200) {
        out({ status: res.status, body: await res.text() });
        return;
    }
    if (await readEvents(res)) out({ done: true });
}

try {
    if (mode === "call") await call();
    else if (mode === "resume") await resume();
    else throw new Error(`unknown mode ${mode}`);
    clearTimeout(deadline);
} catch (e) {
    out({ error: String(e) });
    process.exit(1);
}
