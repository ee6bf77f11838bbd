// toolgate dashboard: relative times, live session table, server-sent event stream.
// No framework, no network access beyond the dashboard's own API.
"use strict";
(function () {
  const body = document.body;
  const base = body.dataset.base || "";
  const refreshMs = Number(body.dataset.refreshMs) || 2000;
  const MAX_EVENT_ROWS = 500;

  function ago(seconds) {
    const s = Math.max(0, Math.round(Date.now() / 1000 - seconds));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    return Math.floor(s / 3600) + " h ago";
  }
  function stamp(root) {
    for (const cell of root.querySelectorAll("[data-time]")) {
      const t = Number(cell.dataset.time);
      cell.textContent = t ? ago(t) : "never";
      cell.title = t ? new Date(t * 1000).toISOString() : "";
    }
  }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("data-")) node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return node;
  }
  function tags(names) {
    if (!names.length) return [el("span", { class: "dim" }, "none")];
    return names.flatMap((n) => [el("span", { class: "tag" }, n), " "]);
  }

  // -- sessions ----------------------------------------------------------------------
  function sessionRow(r) {
    const principal = el("td", { class: "principal" }, r.principal || "?");
    if (r.trust) principal.append(" ", el("span", { class: "tag" }, r.trust));
    const era = el("td", { class: "era" }, r.era || "?");
    if (r.protocol) era.append(" ", el("span", { class: "dim" }, r.protocol));
    const client = el("td", { class: "client" }, r.client || "?");
    if (r.client_version) client.append(" ", el("span", { class: "dim" }, r.client_version));
    const link = el("a", { href: base + "/explain?session=" + encodeURIComponent(r.key), title: r.key }, "explain");
    return el("tr", { "data-key": r.key },
      principal, client, el("td", {}, r.transport || "?"), era,
      el("td", { class: "strategy" }, r.strategy || "?"),
      el("td", { class: "groups" }, ...tags(r.active_groups)),
      el("td", { class: "stage" }, r.stage),
      el("td", { class: "when", "data-time": String(r.last_activity) }),
      el("td", {}, link));
  }
  async function refreshSessions() {
    try {
      const response = await fetch(base + "/api/sessions", { credentials: "same-origin" });
      if (response.status === 401) { location.href = base + "/login"; return; }
      const data = await response.json();
      const tbody = document.querySelector("#sessions tbody");
      const rows = data.sessions.map(sessionRow);
      if (!rows.length) rows.push(el("tr", { class: "empty" }, el("td", { colSpan: 9 }, "No live sessions.")));
      tbody.replaceChildren(...rows);
      document.getElementById("session-count").textContent = String(data.sessions.length);
      stamp(tbody);
    } catch (err) {
      console.warn("toolgate dashboard: cannot refresh sessions", err);
    }
  }

  // -- overview: backends' health and the live session count -----------------------------
  async function refreshOverview() {
    try {
      const response = await fetch(base + "/api/overview", { credentials: "same-origin" });
      if (response.status === 401) { location.href = base + "/login"; return; }
      const data = await response.json();
      const badge = document.getElementById("health-status");
      if (badge && data.health.status) {
        badge.textContent = data.health.status;
        badge.className = "badge status-" + data.health.status;
      }
      for (const [name, b] of Object.entries(data.health.backends)) {
        const row = document.querySelector(`#backends tr[data-backend="${CSS.escape(name)}"]`);
        if (!row) continue;
        const status = row.querySelector(".status");
        status.textContent = b.status;
        status.className = "status status-" + b.status;
        row.querySelector(".tools").textContent = String(b.tools);
        row.querySelector(".error").textContent = b.error || "";
      }
      document.getElementById("live-sessions").textContent = String(data.sessions);
    } catch (err) {
      console.warn("toolgate dashboard: cannot refresh the overview", err);
    }
  }

  // -- events ------------------------------------------------------------------------
  function shown(v) {
    if (typeof v === "object") return JSON.stringify(v);
    if (typeof v === "number" && !Number.isInteger(v)) return String(Math.round(v * 1e4) / 1e4);
    return v;
  }
  function eventRow(e) {
    const skip = new Set(["id", "type", "time", "session", "principal"]);
    const details = Object.entries(e).filter(([k]) => !skip.has(k))
      .map(([k, v]) => k + "=" + shown(v)).join(" ");
    return el("tr", {
      "data-id": String(e.id), "data-type": e.type,
      "data-principal": e.principal || "", "data-session": e.session || "",
    },
    el("td", { class: "when", "data-time": String(e.time) }),
    el("td", { class: "type" }, e.type), el("td", {}, e.principal || ""),
    el("td", { class: "session" }, e.session || ""), el("td", { class: "details" }, details));
  }
  function applyFilters() {
    // types and principal are filtered by the server (page and stream); the text
    // filter hides rows as it is typed
    const q = document.querySelector("#filters #q").value.trim();
    for (const row of document.querySelectorAll("#events tbody tr")) {
      row.hidden = !(!q || row.dataset.session.includes(q) || row.dataset.principal.includes(q));
    }
  }
  function streamEvents() {
    const tbody = document.querySelector("#events tbody");
    const status = document.getElementById("stream-status");
    const newest = tbody.querySelector("tr[data-id]");
    const after = newest ? newest.dataset.id : "0";
    const form = document.getElementById("filters");
    const query = form.dataset.query ? "&" + form.dataset.query : "";
    const source = new EventSource(base + "/api/events/stream?after=" + after + query);
    source.onopen = () => { status.textContent = "live"; status.className = "live"; };
    source.onerror = () => { status.textContent = "reconnecting…"; status.className = "dim"; };
    source.addEventListener("toolgate", (message) => {
      const row = eventRow(JSON.parse(message.data));
      tbody.prepend(row);
      stamp(row);
      while (tbody.rows.length > MAX_EVENT_ROWS) tbody.deleteRow(-1);
      applyFilters();
    });
    form.addEventListener("input", applyFilters);
    form.addEventListener("change", (event) => {
      if (event.target.name !== "q") form.requestSubmit();
    });
    applyFilters();
  }

  document.addEventListener("DOMContentLoaded", () => {
    stamp(document);
    setInterval(() => stamp(document), 5000);
    if (body.dataset.page === "sessions") setInterval(refreshSessions, refreshMs);
    if (body.dataset.page === "overview") setInterval(refreshOverview, refreshMs);
    if (body.dataset.page === "events") streamEvents();
  });
})();
