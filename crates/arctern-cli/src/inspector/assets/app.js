// arctern inspect: the page. Everything the server sends is shown as text (textContent),
// never parsed as HTML; URLs are opened only after a scheme check and the user's consent.
// The launch token comes in the URL fragment, leaves the address bar at once, and is sent
// as a bearer header (never a cookie).

const TOKEN_KEY = "arctern-inspect-token";
const IMAGE_CAP = 2 * 1024 * 1024; // base64 characters of one image or audio clip shown

function takeToken() {
  const m = /^#k=([0-9a-f]{64})$/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, m[1]);
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem(TOKEN_KEY) || "";
}
const token = takeToken();

async function api(path, body) {
  const init = { headers: { Authorization: "Bearer " + token } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  if (!r.ok) {
    const e = new Error((data && data.error) || ("HTTP " + r.status));
    e.status = r.status;
    throw e;
  }
  return data;
}

// An element; props are properties (never HTML), children are nodes or text.
function h(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null) continue;
    if (k === "on") for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else if (k === "attrs") for (const [a, av] of Object.entries(v)) e.setAttribute(a, av);
    else e[k] = v;
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}
const text = (v) => (v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v));
const pretty = (v) => JSON.stringify(v, null, 2);
const $ = (id) => document.getElementById(id);

// Only web pages may be opened: http and https, nothing else (no javascript:, no data:).
export function openable(url) {
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:";
  } catch (_) {
    return false;
  }
}

function notice(message) {
  const n = $("notice");
  n.textContent = message || "";
  n.hidden = !message;
}

// ------------------------------------------------------------------ views

const views = ["connection", "tools", "prompts", "resources", "timeline", "frames"];
function show(view) {
  for (const v of views) {
    $("view-" + v).hidden = v !== view;
    const b = document.querySelector(`nav button[data-view="${v}"]`);
    if (v === view) b.setAttribute("aria-current", "page"); else b.removeAttribute("aria-current");
  }
  const load = { connection: loadConnection, tools: loadTools, prompts: loadPrompts, resources: loadResources, timeline: renderTimeline, frames: loadFrames }[view];
  load().catch((e) => notice(e.message));
}
for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => show(b.dataset.view));

async function loadConnection() {
  const c = await api("/api/connection");
  $("target").textContent = c.target;
  const info = c.serverInfo || {};
  $("view-connection").replaceChildren(h("div", { className: "panel" },
    h("h2", {}, "Connection"),
    h("table", {},
      row("Target", c.target),
      row("Protocol version", c.protocolVersion),
      row("Era", c.era),
      row("Server", [info.title || info.name, info.version].filter(Boolean).join(" ")),
      row("Client", [c.clientInfo && c.clientInfo.name, c.clientInfo && c.clientInfo.version].filter(Boolean).join(" "))),
    h("h3", {}, "Instructions"), h("pre", { className: "instructions" }, c.instructions || "(none)"),
    h("h3", {}, "Server capabilities"), h("pre", {}, pretty(c.capabilities)),
    h("h3", {}, "Client capabilities"), h("pre", {}, pretty(c.clientCapabilities))));
}
function row(k, v) { return h("tr", {}, h("th", {}, k), h("td", {}, text(v))); }

// A list with search on the left, a panel on the right.
function browser(container, items, describe, open) {
  const search = h("input", { type: "search", placeholder: "Search", className: "search" });
  const list = h("div", { className: "list" });
  const panel = h("div", { className: "panel" }, h("span", { className: "muted" }, "Pick one on the left."));
  const draw = () => {
    const q = search.value.toLowerCase();
    list.replaceChildren(...items.filter((it) => JSON.stringify(describe(it)).toLowerCase().includes(q)).map((it) => {
      const [name, desc] = describe(it);
      const b = h("button", { className: "item", on: { click: () => {
        for (const o of list.children) o.setAttribute("aria-selected", "false");
        b.setAttribute("aria-selected", "true");
        panel.replaceChildren(...open(it));
      } } }, h("div", { className: "name" }, name), h("div", { className: "desc" }, desc || ""));
      b.dataset.name = name;
      return b;
    }));
  };
  search.addEventListener("input", draw);
  draw();
  container.replaceChildren(h("div", { className: "split" }, h("div", {}, search, list), panel));
}

async function loadTools() {
  const tools = await api("/api/tools");
  browser($("view-tools"), tools, (t) => [t.name, t.description], toolForm);
}

function toolForm(t) {
  const inputs = {};
  const fields = (t.params || []).map((p) => {
    let input;
    const types = p.types || [];
    if (Array.isArray(p.enum)) {
      input = h("select", {}, h("option", { value: "" }, ""), p.enum.map((v) => h("option", { value: text(v) }, text(v))));
    } else if (types.length === 1 && types[0] === "boolean") {
      input = h("select", {}, h("option", { value: "" }, ""), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
    } else {
      input = h("input", { type: "text", placeholder: types.join(" | ") });
    }
    input.name = p.name;
    input.id = "arg-" + p.name;
    inputs[p.name] = input;
    return h("div", {}, h("label", { htmlFor: input.id }, p.name + (p.required ? " *" : "")),
      input, p.description ? h("div", { className: "hint" }, text(p.description)) : null);
  });
  const json = h("textarea", { placeholder: "{}  (all arguments as one JSON object; the fields above are merged over it)" });
  const error = h("div", { className: "error form-error" });
  const run = h("button", { className: "primary", on: { click: async () => {
    error.textContent = "";
    const args = {};
    for (const [k, i] of Object.entries(inputs)) args[k] = i.value;
    try {
      await api("/api/call", { kind: "tool", name: t.name, args, json: json.value });
      show("timeline");
    } catch (e) { error.textContent = e.message; }
  } } }, "Call");
  return [h("h2", {}, t.name), h("p", {}, text(t.description)), ...fields,
    h("label", {}, "JSON arguments"), json, run, error,
    h("details", {}, h("summary", {}, "Input schema"), h("pre", {}, pretty(t.inputSchema)))];
}

async function loadPrompts() {
  const prompts = await api("/api/prompts");
  browser($("view-prompts"), prompts, (p) => [p.name, p.description], (p) => {
    const inputs = {};
    const fields = (p.arguments || []).map((a) => {
      const input = h("input", { type: "text", name: a.name, id: "parg-" + a.name });
      inputs[a.name] = input;
      return h("div", {}, h("label", { htmlFor: input.id }, a.name + (a.required ? " *" : "")), input,
        a.description ? h("div", { className: "hint" }, text(a.description)) : null);
    });
    const error = h("div", { className: "error form-error" });
    const run = h("button", { className: "primary", on: { click: async () => {
      error.textContent = "";
      const args = {};
      for (const [k, i] of Object.entries(inputs)) args[k] = i.value;
      try { await api("/api/call", { kind: "prompt", name: p.name, args }); show("timeline"); } catch (e) { error.textContent = e.message; }
    } } }, "Get");
    return [h("h2", {}, p.name), h("p", {}, text(p.description)), ...fields, run, error];
  });
}

async function loadResources() {
  const { resources, templates } = await api("/api/resources");
  const items = resources.map((r) => ({ uri: r.uri, name: r.name, desc: r.description, kind: "resource" }))
    .concat(templates.map((t) => ({ uri: t.uriTemplate, name: t.name, desc: t.description, kind: "template" })));
  browser($("view-resources"), items, (r) => [r.uri, [r.kind === "template" ? "template" : "", r.name, r.desc].filter(Boolean).join(" · ")], (r) => {
    const uri = h("input", { type: "text", value: r.uri, id: "resource-uri" });
    const error = h("div", { className: "error form-error" });
    const run = h("button", { className: "primary", on: { click: async () => {
      error.textContent = "";
      try { await api("/api/call", { kind: "resource", name: uri.value }); show("timeline"); } catch (e) { error.textContent = e.message; }
    } } }, "Read");
    return [h("h2", {}, r.name || r.uri), h("p", {}, text(r.desc)), h("label", { htmlFor: "resource-uri" }, "URI"), uri, run, error];
  });
}

// ------------------------------------------------------------------ questions

const shownQuestions = new Map();

function who(q) {
  const a = q.asker || {};
  return h("div", { className: "who" }, `Question ${q.key} · ${q.kind}` +
    (a.method ? ` · ${a.method} ${a.target}` : "") + (a.server ? ` · from ${a.server}` : ""));
}

function questionCard(q) {
  const error = h("div", { className: "error card-error" });
  const send = async (body) => {
    error.textContent = "";
    try { await api("/api/questions/" + q.id, body); card.remove(); shownQuestions.delete(q.id); }
    catch (e) { error.textContent = e.message; }
  };
  const buttons = (accept) => [
    h("button", { className: "primary answer-accept", on: { click: () => send(accept()) } }, "Accept"),
    h("button", { className: "secondary answer-decline", on: { click: () => send({ action: "decline" }) } }, "Decline"),
    q.kind === "sampling" ? null : h("button", { className: "secondary answer-cancel", on: { click: () => send({ action: "cancel" }) } }, "Cancel"),
  ];
  let body = [];
  if (q.kind === "elicitation/form") {
    const read = {};
    const fields = q.fields.map((f) => {
      const id = `q${q.id}-${f.name}`;
      let input;
      if (f.kind === "single") {
        input = h("select", { id }, f.required ? null : h("option", { value: "" }, ""),
          f.options.map((o) => h("option", { value: o.value, selected: f.default === o.value }, o.title)));
        read[f.name] = () => input.value;
      } else if (f.kind === "boolean") {
        input = h("select", { id }, h("option", { value: "" }, ""), h("option", { value: "true" }, "yes"), h("option", { value: "false" }, "no"));
        if (f.default) input.value = f.default;
        read[f.name] = () => input.value;
      } else if (f.kind === "multi") {
        const boxes = f.options.map((o) => h("input", { type: "checkbox", value: o.value, checked: (f.default || []).includes(o.value) }));
        input = h("div", { id }, f.options.map((o, i) => h("label", { className: "hint" }, boxes[i], " ", o.title)));
        read[f.name] = () => boxes.filter((b) => b.checked).map((b) => b.value);
      } else {
        input = h("input", { type: "text", id, value: f.default || "" });
        read[f.name] = () => input.value;
      }
      input.name = f.name;
      return h("div", {}, h("label", { htmlFor: id }, f.label + (f.required ? " *" : "")), input,
        h("div", { className: "hint" }, [f.description, f.expects].filter(Boolean).join(" · ")));
    });
    body = [...fields, ...buttons(() => {
      const out = {};
      for (const [k, r] of Object.entries(read)) out[k] = r();
      return { action: "accept", fields: out };
    })];
  } else if (q.kind === "elicitation/url") {
    const safe = q.openable && openable(q.url);
    const consent = h("input", { type: "checkbox", id: `consent-${q.id}`, disabled: !safe });
    const open = h("button", { className: "secondary open-url", disabled: true, on: { click: () => {
      if (consent.checked && openable(q.url)) window.open(q.url, "_blank", "noopener,noreferrer");
    } } }, "Open the page");
    consent.addEventListener("change", () => { open.disabled = !consent.checked; });
    body = [h("div", { className: "url" }, "URL: ", q.url), h("div", {}, "Domain: ", h("b", {}, text(q.domain || "(none)"))),
      (q.warnings || []).map((w) => h("div", { className: "error" }, w)),
      safe ? h("label", { className: "hint", htmlFor: consent.id }, consent, " I want to open this page")
        : h("div", { className: "error" }, "This is not a web page (http or https): it will not be opened."),
      open, h("div", { className: "hint" }, "Accept once you are done there."), ...buttons(() => ({ action: "accept" }))];
  } else if (q.kind === "sampling") {
    const req = q.request || {};
    const msgs = (req.messages || []).map((m) => h("pre", {}, `${m.role}: ` + (m.content && m.content.type === "text" ? m.content.text : pretty(m.content))));
    const answer = h("textarea", { className: "sampling-answer", placeholder: "The model's answer" });
    body = [req.systemPrompt ? h("pre", {}, "system: " + req.systemPrompt) : null, ...msgs, answer,
      ...buttons(() => ({ action: "accept", text: answer.value }))];
  }
  const card = h("div", { className: "card", attrs: { "data-question": String(q.id) } },
    who(q), h("p", { className: "message" }, text(q.message)), ...body, error);
  return card;
}

async function pollQuestions() {
  const qs = await api("/api/questions");
  const live = new Set(qs.map((q) => q.id));
  for (const [id, card] of shownQuestions) if (!live.has(id)) { card.remove(); shownQuestions.delete(id); }
  for (const q of qs) {
    if (shownQuestions.has(q.id)) continue;
    const card = questionCard(q);
    shownQuestions.set(q.id, card);
    $("questions").append(card);
  }
}

// ------------------------------------------------------------------ timeline

let flowsSeen = "";
let flows = [];
let labOn = false;

async function lab(flow, round, action) {
  try { await api(`/api/flows/${flow}/lab`, { round, action }); } catch (e) { notice(e.message); }
}

const ms = (n) => (n === undefined || n === null ? "" : n + " ms");
const state = (s) => (s ? `${s.bytes} B · ${s.hash}` : "—");

function resultView(result) {
  if (!result || typeof result !== "object") return h("pre", {}, text(result));
  const blocks = result.content || result.messages || result.contents;
  const out = [];
  const one = (c) => {
    if (!c || typeof c !== "object") return h("pre", {}, text(c));
    if (c.type === "text" || typeof c.text === "string") return h("pre", { className: "result-text" }, c.text);
    if ((c.type === "image" || c.type === "audio") && typeof c.data === "string") {
      const mime = String(c.mimeType || "");
      const kindOk = c.type === "image" ? /^image\/(png|jpeg|gif|webp)$/.test(mime) : /^audio\/[a-z0-9.+-]+$/.test(mime);
      if (kindOk && c.data.length <= IMAGE_CAP && /^[A-Za-z0-9+/=]*$/.test(c.data)) {
        const src = `data:${mime};base64,${c.data}`;
        return c.type === "image" ? h("img", { className: "result", src, alt: "image from the result" }) : h("audio", { controls: true, src });
      }
      return h("div", { className: "muted" }, `${c.type} (${mime}, ${c.data.length} base64 characters) not shown`);
    }
    if (c.type === "resource" && c.resource) return h("div", {}, h("div", { className: "muted" }, "resource " + text(c.resource.uri)), one(c.resource));
    if (c.type === "resource_link") return h("div", {}, "link: ", h("code", {}, text(c.uri)));
    if (c.content) return h("div", {}, h("div", { className: "muted" }, text(c.role)), one(c.content));
    return h("pre", {}, pretty(c));
  };
  if (Array.isArray(blocks)) for (const c of blocks) out.push(one(c));
  if (result.isError) out.unshift(h("div", { className: "error" }, "The tool reported an error (isError)."));
  if (result.structuredContent !== undefined) out.push(h("h3", {}, "Structured content"), h("pre", {}, pretty(result.structuredContent)));
  out.push(h("details", {}, h("summary", {}, "Raw result"), h("pre", {}, pretty(result))));
  return h("div", { className: "result" }, out);
}

function flowView(f) {
  const total = (k) => f.rounds.reduce((s, r) => s + (r[k] || 0), 0);
  const bytes = f.rounds.reduce((s, r) => s + (r.stateReceived ? r.stateReceived.bytes : 0), 0);
  const copy = h("button", { className: "secondary copy-command", on: { click: () => {
    navigator.clipboard.writeText(f.command).then(() => { copy.textContent = "Copied"; }, () => { copy.textContent = "Select the command below"; });
  } } }, "Copy as arctern call");
  const rows = f.rounds.map((r) => h("tr", { className: "round" },
    h("td", {}, String(r.index)),
    h("td", { className: "round-id" }, text(r.id)),
    h("td", { className: "result-type" }, r.resultType),
    h("td", {}, r.questions.map((q) => h("div", {}, `${q.key}: ${q.kind}`))),
    h("td", {}, r.answers.map((a) => h("div", {}, `${a.key}: ${a.action}` + (a.content ? " " + JSON.stringify(a.content) : "")))),
    h("td", { className: "state-sent" }, state(r.stateSent)),
    h("td", { className: "state-received" }, state(r.stateReceived)),
    h("td", {}, ms(r.latencyMs)),
    h("td", { className: "human-wait" }, ms(r.humanWaitMs)),
    h("td", { className: "error" }, text(r.error)),
    labOn && f.status !== "running" ? h("td", { className: "lab" },
      h("button", { className: "secondary lab-replay", on: { click: () => lab(f.id, r.index, "replay") } }, "Replay"),
      r.stateSent ? h("button", { className: "secondary lab-tamper", on: { click: () => lab(f.id, r.index, "tamper") } }, "Tamper one byte") : null,
      r.stateSent ? h("button", { className: "secondary lab-drop", on: { click: () => lab(f.id, r.index, "drop") } }, "Drop state") : null) : null));
  const labRuns = (f.lab || []).map((l) => h("tr", { className: "lab-run" },
    h("td", {}, `${l.action} round ${l.round}`), h("td", {}, "expected: " + l.expected), h("td", { className: "lab-actual" }, "actual: " + l.actual)));
  return h("div", { className: "panel flow", attrs: { "data-flow": String(f.id) } },
    h("div", { className: "head" }, h("h2", {}, `#${f.id} ${f.kind} ${f.target}`),
      h("span", { className: "status status-" + f.status }, f.status),
      h("span", { className: "totals" }, `${f.rounds.length} rounds · ${total("latencyMs")} ms on the wire · ${total("humanWaitMs")} ms waiting for you · ${bytes} B of state received`)),
    h("div", { className: "hint" }, "arguments: " + JSON.stringify(f.arguments)),
    h("table", {}, h("thead", {}, h("tr", {}, ["round", "id", "resultType", "questions", "answers", "state sent", "state received", "latency", "human wait", "error"].map((c) => h("th", {}, c)))),
      h("tbody", {}, rows)),
    labRuns.length ? h("table", { className: "lab-runs" }, h("tbody", {}, labRuns)) : null,
    f.error ? h("div", { className: "error flow-error" }, f.error) : null,
    f.result !== null && f.result !== undefined ? resultView(f.result) : null,
    copy, h("code", { className: "command" }, f.command));
}

async function renderTimeline() {
  const root = $("view-timeline");
  const toggle = h("input", { type: "checkbox", id: "lab-toggle", checked: labOn, on: { change: () => { labOn = toggle.checked; renderTimeline(); } } });
  const warning = h("label", { className: "hint", htmlFor: "lab-toggle" }, toggle,
    " State lab: send a round again unchanged, with one byte of its requestState changed, or without it. This breaks the rule that a client echoes the state as it came: use it on servers you control.");
  root.replaceChildren(warning, flows.length ? "" : h("p", { className: "muted" }, "No calls yet: call a tool, get a prompt or read a resource."),
    ...flows.slice().reverse().map(flowView));
}

async function pollFlows() {
  const data = await api("/api/flows");
  const seen = JSON.stringify(data);
  if (seen === flowsSeen) return;
  flowsSeen = seen;
  flows = data;
  if (!$("view-timeline").hidden) renderTimeline();
}

// ------------------------------------------------------------------ frames

async function loadFrames() {
  const { frames, dropped } = await api("/api/frames");
  const exportButton = h("button", { className: "secondary", on: { click: () => {
    const blob = new Blob([JSON.stringify({ frames, dropped }, null, 2)], { type: "application/json" });
    const a = h("a", { href: URL.createObjectURL(blob), download: "arctern-inspect-frames.json" });
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  } } }, "Export as JSON");
  const refresh = h("button", { className: "secondary", on: { click: () => loadFrames().catch((e) => notice(e.message)) } }, "Refresh");
  $("view-frames").replaceChildren(h("div", { className: "panel" },
    h("h2", {}, `Frames (${frames.length} kept${dropped ? `, ${dropped} dropped` : ""})`), exportButton, refresh,
    frames.map((f) => {
      const m = f.message || {};
      const what = m.method || (m.result ? "result" : m.error ? "error " + text(m.error.code) : "");
      return h("details", { className: "frame" },
        h("summary", {}, h("span", { className: f.direction }, f.direction === "sent" ? "→ " : "← "),
          `#${f.seq} ${f.atMs} ms ${what}` + (m.id !== undefined ? ` id ${text(m.id)}` : "")),
        h("pre", {}, pretty(m)));
    })));
}

// ------------------------------------------------------------------ start

async function tick() {
  try { await Promise.all([pollQuestions(), pollFlows()]); notice(""); }
  catch (e) { notice(e.status === 401 ? "This page has no valid token: open the URL arctern inspect printed." : e.message); }
}

if (!token) notice("This page has no token: open the URL arctern inspect printed.");
show("connection");
tick();
setInterval(tick, 500);
