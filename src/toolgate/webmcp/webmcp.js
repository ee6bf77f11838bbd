// toolgate WebMCP publisher: registers a principal's surfaced tools with the page's
// WebMCP model context and runs them through the gateway, where every policy applies.
//   <script src="http://127.0.0.1:8765/webmcp.js"
//           data-gateway="http://127.0.0.1:8765" data-token="..."></script>
// State for pages and tests: window.toolgateWebMCP = {tools, session, ready, refresh}.
"use strict";
(function () {
  const script = document.currentScript;
  const gateway = ((script && script.dataset.gateway) || new URL(script.src).origin).replace(/\/+$/, "");
  const token = (script && script.dataset.token) || "";
  const context = document.modelContext || navigator.modelContext;
  const NAME = /^[A-Za-z0-9_.-]{1,128}$/; // WebMCP's (and MCP's) tool-name rule
  const state = { tools: [], session: null, version: 0, ready: null, refresh: null, enabled: false };
  window.toolgateWebMCP = state;

  if (!context || typeof context.registerTool !== "function") {
    console.info("toolgate webmcp: this page has no document.modelContext (WebMCP is not " +
      "available in this browser), so no tools were registered");
    state.ready = Promise.resolve([]);
    return;
  }
  state.enabled = true;
  state.session = (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2)).replace(/-/g, "");

  const registered = new Map(); // name -> {definition JSON, AbortController}

  async function api(path, init) {
    const headers = { "X-Toolgate-Session": state.session };
    if (token) headers.Authorization = "Bearer " + token;
    if (init && init.body) headers["Content-Type"] = "application/json";
    const response = await fetch(gateway + path, { ...init, headers, mode: "cors", credentials: "omit" });
    if (!response.ok) {
      const text = await response.text();
      throw new Error("toolgate webmcp: " + path + " answered HTTP " + response.status + ": " + text);
    }
    return response.json();
  }

  async function call(name, input) {
    const reply = await api("/webmcp/call", {
      method: "POST", body: JSON.stringify({ name: name, arguments: input || {} }),
    });
    if (reply.error) throw new Error(reply.error.message);
    // after this result is delivered: re-registering now could cancel this very call
    if (reply.list_changed) setTimeout(() => state.refresh(), 0);
    return reply.result;
  }

  function definition(tool) {
    const def = {
      name: tool.name,
      description: tool.description || tool.title || tool.name,
      inputSchema: tool.inputSchema || { type: "object", properties: {} },
      execute: (input) => call(tool.name, input),
    };
    if (tool.title) def.title = tool.title;
    if (tool.annotations) def.annotations = tool.annotations;
    return def;
  }

  async function sync() {
    const data = await api("/webmcp/tools");
    const wanted = new Map();
    for (const tool of data.tools) {
      if (NAME.test(tool.name)) wanted.set(tool.name, tool);
      else console.warn("toolgate webmcp: skipping tool with a name WebMCP rejects:", tool.name);
    }
    for (const [name, entry] of registered) {
      const tool = wanted.get(name);
      if (!tool || JSON.stringify(tool) !== entry.json) {
        entry.controller.abort(); // unregisters the tool
        registered.delete(name);
      }
    }
    for (const [name, tool] of wanted) {
      if (registered.has(name)) continue;
      const controller = new AbortController();
      try {
        await context.registerTool(definition(tool), { signal: controller.signal });
        registered.set(name, { json: JSON.stringify(tool), controller: controller });
      } catch (err) {
        console.warn("toolgate webmcp: cannot register " + name + ":", err);
      }
    }
    state.tools = [...registered.keys()].sort();
    state.version += 1;
    document.dispatchEvent(new CustomEvent("toolgate:webmcp", { detail: { tools: state.tools } }));
    return state.tools;
  }

  let chain = Promise.resolve([]);
  state.refresh = () => {
    chain = chain.catch(() => []).then(sync);
    state.ready = chain;
    return chain;
  };
  state.refresh().catch((err) => console.error(err));
})();
