#!/usr/bin/env node
// A durable agent for Node.js, written from the session contract alone (SESSION-CONTRACT.md, v2).
// It shares no code with chaos: its own log writer, its own view of the state (it trusts its own
// writes), its own planner (section 7), a streaming OpenAI chat-completions client, and the read,
// write, edit and bash tools. Node's standard library only.
//
//   node agent.js start PROMPT        a new session (prints "session: ID" on stderr)
//   node agent.js resume ID [PROMPT]  recovery to the end (then a new prompt, if given)
//   node agent.js compact ID          compact the session's context
//   node agent.js configuration       the planner's current configuration, as JSON
//
// NODE_AGENT_MCP_URL: its tools are on an MCP server (Streamable HTTP, the 2025-06-18 initialize
// handshake, tools/list and tools/call only), not its own; NODE_AGENT_MCP_SAFE names the ones the host
// trusts to replay (every other MCP tool is never replayed, whatever the server hints).
//
// Exit codes: 0 completed, 3 blocked, 4 failed, 5 aborted, 1 the log is corrupt or in use, 2 usage.
// NODE_AGENT_BUG turns on deliberately broken behaviours (comma-separated), so chaos can show it
// catches them: stale-assistant-calls (section 8), replay-never-tools, no-fsync.
"use strict";

const fs = require("fs");
const path = require("path");
const http = require("http");
const crypto = require("crypto");
const { spawn } = require("child_process");

const EXIT = { completed: 0, blocked: 3, failed: 4, aborted: 5 };
const BUGS = new Set((process.env.NODE_AGENT_BUG || "").split(",").filter(Boolean));
const KNOWN_BUGS = ["stale-assistant-calls", "replay-never-tools", "no-fsync"];
const SESSIONS = path.join(".node-agent", "sessions");
const SYSTEM_PROMPT = "You are a careful coding agent. Work only inside the current workspace.";
const COMPACTION_PROMPT = "Summarize the conversation so far for a continuation; keep every fact needed later.";
const OUTPUT_OPTIONS = { max_tokens: 4096 };
const SYNTHETIC = {
  invalidArguments: "Error: Tool arguments were invalid; the tool was not executed.",
  unknownTool: "Error: Unknown tool; the tool was not executed.",
  truncated: "Error: Tool call arguments were truncated by the model token limit; the tool was not executed.",
  aborted: "Operation aborted before execution.",
  interrupted: "Operation interrupted after execution status became unknown; the tool was not replayed.",
};
const STOP = { stop: "stop", tool_calls: "toolUse", function_call: "toolUse", length: "length" };
const OUTPUT_CAP = 32000;

class Usage extends Error {}
class Unusable extends Error {}

// -- identity: RFC 8785 (JCS) digests and UUIDv7 ids -----------------------------------------------
function canonical(value) {
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort(); // UTF-16 code unit order, as JCS asks
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
  }
  return JSON.stringify(value);
}
const digest = (value) => "sha256:" + crypto.createHash("sha256").update(canonical(value), "utf8").digest("hex");

function uuid7() {
  const bytes = crypto.randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const h = bytes.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// -- configuration ---------------------------------------------------------------------------------
function schema(props) {
  return {
    type: "object",
    properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, { type: "string", description: d }])),
    required: Object.keys(props),
    additionalProperties: false,
  };
}
const DEFINITIONS = {
  read: { description: "Read a UTF-8 text file in the workspace.", parameters: schema({ path: "file path" }) },
  write: {
    description: "Create or overwrite a text file in the workspace.",
    parameters: schema({ path: "file path", content: "the whole new content" }),
  },
  edit: {
    description: "Replace exactly one occurrence of a text in a workspace file.",
    parameters: schema({ path: "file path", old: "text to replace", new: "replacement" }),
  },
  bash: {
    description: "Run a bash command in the workspace; returns exit status and output.",
    parameters: schema({ command: "the command line" }),
  },
};

async function configuration() {
  const env = process.env;
  const model = env.NODE_AGENT_MODEL || "unset";
  const overrides = JSON.parse(env.NODE_AGENT_TOOLS || "{}");
  const trusted = new Set((env.NODE_AGENT_MCP_SAFE || "").split(",").map((n) => n.trim()).filter(Boolean));
  const served = mcp ? (await mcp.request("tools/list", {})).tools.map((t) => [t.name, { description: t.description || "", parameters: t.inputSchema }]) : null;
  const tools = (served || Object.entries(DEFINITIONS)).map(([name, base]) => {
    const extra = overrides[name] || {};
    const definition = { name, description: extra.description || base.description, parameters: base.parameters };
    const safe = served ? trusted.has(name) : name === "read";
    const origin = served ? "mcp" : "builtin";
    return {
      name,
      definition,
      definitionDigest: digest(definition),
      replay: extra.replay || (safe ? "safe" : "never"),
      replayKey: extra.replayKey || (safe ? `${origin}:${name}:v1` : `${origin}:${name}:never:v1`),
    };
  });
  const snapshot = {
    model,
    systemPromptDigest: digest(SYSTEM_PROMPT),
    tools: tools.map((t) => ({ name: t.name, definitionDigest: t.definitionDigest })),
    adapterIdentity: "node-reference:openai-chat-stream:v1",
    routingIdentity: `openai:${model}`,
    outputOptionsDigest: digest(OUTPUT_OPTIONS),
  };
  const identity = env.NODE_AGENT_ENVIRONMENT_IDENTITY || fs.realpathSync(process.cwd());
  const current = {
    configurationDigest: digest(snapshot),
    environmentIdentity: identity,
    tools: tools.map((t) => ({ name: t.name, definitionDigest: t.definitionDigest, replay: t.replay, replayKey: t.replayKey })),
  };
  return { model, snapshot, current, tools: Object.fromEntries(tools.map((t) => [t.name, t])) };
}

// -- the session log: one writer, one line per transaction, fdatasync after each ---------------------
class Session {
  constructor(file, fd, state) {
    this.file = file;
    this.fd = fd;
    this.state = state;
  }

  static lock(file) {
    const lock = file + ".lock";
    for (let tries = 0; tries < 2; tries++) {
      try {
        fs.writeFileSync(lock, String(process.pid), { flag: "wx" });
        process.on("exit", () => fs.rmSync(lock, { force: true }));
        return;
      } catch (err) {
        if (err.code !== "EEXIST") throw err;
        const owner = Number(fs.readFileSync(lock, "utf8"));
        if (owner && alive(owner)) throw new Unusable(`session is open in another writer (pid ${owner})`);
        fs.rmSync(lock, { force: true }); // its writer is gone (killed): the lock is stale
      }
    }
    throw new Unusable("cannot take the session lock");
  }

  static create(workspace, cfg, identity) {
    const id = uuid7();
    makeDirectories(path.join(workspace, SESSIONS), !BUGS.has("no-fsync"));
    const file = path.join(workspace, SESSIONS, `${id}.jsonl`);
    Session.lock(file);
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
    if (!BUGS.has("no-fsync")) syncDirectory(path.dirname(file)); // a new file's entry is durable only once synced
    const header = { kind: "header", version: 2, id, createdAt: Date.now(), cwd: workspace, provider: "openai", model: cfg.model, environmentIdentity: identity };
    const session = new Session(file, fd, newState(header));
    session.writeLine(header);
    return session;
  }

  static open(workspace, id) {
    const file = path.join(workspace, SESSIONS, `${id}.jsonl`);
    if (!fs.existsSync(file)) throw new Unusable(`no session ${id} under ${SESSIONS}`);
    Session.lock(file);
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_APPEND);
    const data = fs.readFileSync(file);
    const committed = data.lastIndexOf(0x0a) + 1;
    if (committed < data.length) fs.ftruncateSync(fd, committed); // a torn tail was never committed
    const lines = data.subarray(0, committed).toString("utf8").split("\n").slice(0, -1);
    if (!lines.length) throw new Unusable("session log has no header");
    let state;
    try {
      state = newState(JSON.parse(lines[0]));
      for (const line of lines.slice(1)) apply(state, JSON.parse(line));
    } catch (err) {
      throw new Unusable(`session log is corrupt: ${err.message}`);
    }
    return new Session(file, fd, state);
  }

  writeLine(value) {
    const line = Buffer.from(JSON.stringify(value) + "\n", "utf8");
    let written = 0;
    while (written < line.length) written += fs.writeSync(this.fd, line, written, line.length - written);
    if (!BUGS.has("no-fsync")) fs.fdatasyncSync(this.fd);
  }

  commit(...bodies) {
    const now = Date.now();
    const facts = bodies.map(([kind, body, fixedId]) => {
      const fact = { kind, seq: ++this.state.seq, id: fixedId || uuid7(), timestamp: now };
      if (kind === "usage") Object.assign(fact, body);
      else fact[kind] = body;
      return fact;
    });
    this.writeLine(facts.length === 1 ? facts[0] : facts);
    for (const fact of facts) applyFact(this.state, fact);
  }
}

// mkdir -p, each new directory made durable: under POSIX a new entry survives a power cut only once
// its parent is synced.
function makeDirectories(dir, sync) {
  if (fs.existsSync(dir)) return;
  makeDirectories(path.dirname(dir), sync);
  fs.mkdirSync(dir, { recursive: true });
  if (sync) syncDirectory(path.dirname(dir));
}

function syncDirectory(dir) {
  const dfd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(dfd);
  } finally {
    fs.closeSync(dfd);
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

// -- state: what the log says, trusted (it is this agent's own log) ------------------------------------
function newState(header) {
  if (!header || header.kind !== "header" || header.version !== 2) throw new Error("not a v2 session header");
  return { header, seq: 0, active: [], boundary: null, operation: null, lastAssistant: null, results: new Map() };
}

function apply(state, value) {
  for (const fact of Array.isArray(value) ? value : [value]) applyFact(state, fact);
}

function applyFact(state, fact) {
  state.seq = fact.seq;
  const op = state.operation;
  if (fact.kind === "entry") {
    const e = fact.entry;
    if (e.type === "compaction") {
      op.step.status = "settled";
      state.active = [{ id: fact.id, message: { role: "user", content: "[Compacted history]\n" + e.summary } }, ...e.retainedTail.map((r) => ({ id: r.sourceEntryId, message: r.message }))];
      return;
    }
    state.active.push({ id: fact.id, message: e.message });
    state.boundary = fact.id;
    if (e.attemptId) {
      op.step.status = "settled";
      const calls = e.message.tool_calls || [];
      if (state.lastAssistant && state.lastAssistant.calls.length) state.previousWithCalls = state.lastAssistant;
      state.lastAssistant = { id: fact.id, stepId: e.stepId, stopReason: e.stopReason, calls, results: new Map(), started: new Map() };
      op.assistant = state.lastAssistant;
    } else if (e.toolStartedId) {
      const call = op.toolCalls.get(e.toolStartedId);
      call.status = "completed";
      op.assistant.results.set(call.toolIndex, fact.id);
    } else if (e.assistantEntryId) {
      op.assistant.results.set(e.toolIndex, fact.id);
    }
    return;
  }
  if (fact.kind === "usage") return;
  const r = fact.record;
  switch (r.type) {
    case "runStarted":
      state.operation = { kind: "run", id: r.operationId, input: r.inputEntryId, step: null, assistant: null, toolCalls: new Map(), abort: false };
      break;
    case "compactionStarted":
      state.operation = { kind: "compaction", id: r.operationId, input: r.inputThroughEntryId, result: r.resultEntryId, compacted: r.compactedEntryIds, retained: r.retainedEntryIds, step: null, assistant: null, toolCalls: new Map(), abort: false };
      break;
    case "stepAttempt":
      op.step = { stepId: r.stepId, attemptId: r.attemptId, attempt: r.attempt, kind: r.stepKind, context: r.contextThroughEntryId, digest: r.configurationDigest, snapshot: r.configurationSnapshot, status: "attempting", error: null };
      break;
    case "stepFailed":
      op.step.status = "failed";
      op.step.error = r.error;
      break;
    case "toolStarted": {
      const call = { ...r, toolStartedId: fact.id, status: "pending" };
      op.toolCalls.set(fact.id, call);
      op.assistant.started.set(r.toolIndex, call);
      break;
    }
    case "abortRequested":
      op.abort = true;
      break;
    case "operationFinished":
      state.operation = null;
      break;
  }
}

const unresolved = (a) => (a ? a.calls.map((_, i) => i).filter((i) => !a.results.has(i)) : []);

// -- the planner (section 7, in its order) -------------------------------------------------------------
function synthetic(a, index, reason) {
  const call = a.calls[index];
  const out = { assistantEntryId: a.id, toolIndex: index, toolCallId: call.id, toolName: call.function.name };
  const started = a.started.get(index);
  if (started) Object.assign(out, { toolName: started.toolName, toolStartedId: started.toolStartedId, resultEntryId: started.resultEntryId });
  return { ...out, reason };
}

function parseArguments(text) {
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

function plan(state, current) {
  const op = state.operation;
  if (!op) return { type: "finish", outcome: "completed", completion: "normal" };
  const step = op.step;
  if (op.abort) {
    if (step && step.status === "attempting") return { type: "closeAttempt", error: { code: "aborted", message: "Operation aborted" } };
    const left = unresolved(op.assistant);
    if (left.length) return { type: "appendSynthetic", results: left.map((i) => synthetic(op.assistant, i, op.assistant.started.has(i) ? "interrupted" : "aborted")) };
    return { type: "finish", outcome: "aborted" };
  }
  const stepKind = op.kind === "run" ? "assistant" : "compaction";
  if (!step) return { type: "startStep", stepKind, attempt: 1, context: op.input };
  if (step.status === "attempting" || step.status === "failed") {
    if (current.configurationDigest !== step.digest) return { type: "blocked", reason: "configuration_changed" };
    if (current.environmentIdentity !== state.header.environmentIdentity) return { type: "blocked", reason: "environment_changed" };
    if (step.status === "failed") return { type: "finish", outcome: "failed", error: step.error };
    if (step.attempt === 1) return { type: "startStep", stepKind: step.kind, attempt: 2, stepId: step.stepId, context: step.context };
    return { type: "blocked", reason: "attempts_exhausted" };
  }
  if (op.kind === "compaction") return { type: "finish", outcome: "completed", finalEntryId: op.result };
  // Section 8: the last assistant message, whether or not it has tool calls.
  const a = BUGS.has("stale-assistant-calls") && state.recovering ? lastWithCalls(state) : state.lastAssistant;
  const left = unresolved(a);
  if (a.stopReason === "length") {
    if (left.length) return { type: "appendSynthetic", results: left.map((i) => synthetic(a, i, "truncated")) };
    return { type: "finish", outcome: "completed", completion: "truncated", finalEntryId: a.id };
  }
  if (!a.calls.length) return { type: "finish", outcome: "completed", completion: "normal", finalEntryId: a.id };
  if (!left.length) {
    if (a === state.lastAssistant) return { type: "startStep", stepKind: "assistant", attempt: 1, context: state.boundary };
    return { type: "startStep", stepKind: "assistant", attempt: 1, context: [...a.results.values()].pop(), stale: true };
  }
  const declared = Object.fromEntries(current.tools.map((t) => [t.name, t]));
  const index = left[0];
  const started = a.started.get(index);
  if (!started) {
    const fn = a.calls[index].function;
    if (!declared[fn.name]) return { type: "appendSynthetic", results: [synthetic(a, index, "unknownTool")] };
    const args = parseArguments(fn.arguments);
    if (!args) return { type: "appendSynthetic", results: [synthetic(a, index, "invalidArguments")] };
    return { type: "startTool", mode: "start", index, toolName: fn.name, arguments: args };
  }
  if (started.environmentIdentity !== current.environmentIdentity) return { type: "blocked", reason: "environment_changed" };
  const now = declared[started.toolName];
  const recorded = (step.snapshot.tools.find((t) => t.name === started.toolName) || {}).definitionDigest;
  if (!now || now.definitionDigest !== recorded) return { type: "blocked", reason: "configuration_changed" };
  if (started.replay === "safe") {
    if (now.replay === "safe" && now.replayKey === started.replayKey) return { type: "startTool", mode: "replay", index, call: started };
    return { type: "blocked", reason: "replay_declaration_changed" };
  }
  if (BUGS.has("replay-never-tools") && state.recovering) return { type: "startTool", mode: "replay", index, call: started };
  return { type: "appendSynthetic", results: [synthetic(a, index, "interrupted")] };
}

function lastWithCalls(state) {
  // The section-8 port's planner: the last assistant message that *has* tool calls. After a replayed
  // read and a plain final answer it finds the previous round, plans a stale step, and the log breaks.
  if (state.lastAssistant && state.lastAssistant.calls.length) return state.lastAssistant;
  return state.previousWithCalls || state.lastAssistant;
}

// -- the model: OpenAI chat completions, streamed --------------------------------------------------------
function chat(cfg, messages, withTools, signal) {
  const base = process.env.NODE_AGENT_BASE_URL;
  const url = new URL(base.replace(/\/$/, "") + "/chat/completions");
  const body = JSON.stringify({
    model: cfg.model,
    messages,
    ...(withTools ? { tools: Object.values(cfg.tools).map((t) => ({ type: "function", function: t.definition })) } : {}),
    stream: true,
    stream_options: { include_usage: true },
    ...OUTPUT_OPTIONS,
  });
  const timeout = Number(process.env.NODE_AGENT_TIMEOUT || "60") * 1000;
  return new Promise((resolve, reject) => {
    // A whole-answer deadline: the socket timeout is per read, and an answer that trickles in a byte at a
    // time would never trip it.
    const deadline = setTimeout(() => req.destroy(Object.assign(new Error("no whole answer in time"), { code: "timeout" })), timeout);
    const settle = (fn) => (value) => {
      clearTimeout(deadline);
      fn(value);
    };
    resolve = settle(resolve);
    reject = settle(reject);
    const req = http.request(
      url,
      { method: "POST", headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) }, timeout, signal },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          const code = res.statusCode === 429 ? "rate_limited" : res.statusCode >= 500 ? "server_error" : "request_rejected";
          return reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { code }));
        }
        let buffer = "";
        let done = false; // the stream said [DONE]: anything after it is not this answer
        const answer = { content: "", calls: [], finish: null, usage: null };
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          buffer += chunk;
          let end;
          while (!done && (end = buffer.indexOf("\n\n")) >= 0) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            for (const line of event.split("\n")) {
              if (line === "data: [DONE]") done = true;
              if (done || !line.startsWith("data: ")) continue;
              let data;
              try {
                data = JSON.parse(line.slice(6));
              } catch {
                res.destroy();
                return reject(Object.assign(new Error("an event that is not JSON"), { code: "invalid_response" }));
              }
              if (data.usage) answer.usage = data.usage;
              for (const choice of data.choices || []) {
                const delta = choice.delta || {};
                if (delta.content) answer.content += delta.content;
                for (const tc of delta.tool_calls || []) {
                  const call = (answer.calls[tc.index] = answer.calls[tc.index] || { id: "", type: "function", function: { name: "", arguments: "" } });
                  if (tc.id) call.id = tc.id;
                  if (tc.function && tc.function.name) call.function.name = tc.function.name;
                  if (tc.function && tc.function.arguments) call.function.arguments += tc.function.arguments;
                }
                if (choice.finish_reason) answer.finish = choice.finish_reason;
              }
            }
          }
        });
        res.on("end", () => (answer.finish && done ? resolve(answer) : reject(Object.assign(new Error("the stream ended early"), { code: "invalid_response" }))));
        res.on("error", (err) => reject(Object.assign(err, { code: "connection_error" })));
      },
    );
    req.on("timeout", () => req.destroy(Object.assign(new Error("no answer in time"), { code: "timeout" })));
    req.on("error", (err) => reject(Object.assign(err, { code: err.code === "timeout" ? "timeout" : err.name === "AbortError" ? "aborted" : "connection_error" })));
    req.end(body);
  });
}

// -- tools ---------------------------------------------------------------------------------------------
function inside(workspace, p) {
  if (typeof p !== "string" || !p) throw new Error("path must be a non-empty string");
  const resolved = path.resolve(workspace, p);
  if (resolved !== workspace && !resolved.startsWith(workspace + path.sep)) throw new Error(`path ${JSON.stringify(p)} is outside the workspace`);
  return resolved;
}

async function runTool(name, args, workspace, abort) {
  if (mcp) {
    abort.controller = new AbortController(); // an abort stops the wait; the call goes on at the server
    try {
      return await mcp.call(name, args, abort.controller.signal);
    } finally {
      abort.controller = null;
    }
  }
  const text = (key) => {
    if (typeof args[key] !== "string") throw new Error(`argument ${key} must be a string`);
    return args[key];
  };
  if (name === "read") return fs.readFileSync(inside(workspace, args.path), "utf8").slice(0, OUTPUT_CAP);
  if (name === "write") {
    const file = inside(workspace, args.path);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text("content"));
    return `wrote ${Buffer.byteLength(args.content)} bytes to ${args.path}`;
  }
  if (name === "edit") {
    const file = inside(workspace, args.path);
    const old = fs.readFileSync(file, "utf8");
    const count = old.split(text("old")).length - 1;
    if (count !== 1) throw new Error(`expected exactly one occurrence of the old text, found ${count}`);
    fs.writeFileSync(file, old.replace(args.old, text("new")));
    return `edited ${args.path}`;
  }
  if (name === "bash") {
    const child = spawn("bash", ["-c", text("command")], { cwd: workspace, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    abort.child = child;
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const code = await new Promise((resolve) => child.on("close", resolve));
    abort.child = null;
    if (code !== 0) throw new Error(`exit status ${code}\n${output.slice(0, OUTPUT_CAP)}`);
    return `exit status 0\n${output.slice(0, OUTPUT_CAP)}`;
  }
  throw new Error(`unknown tool ${name}`);
}

// -- tools on an MCP server: Streamable HTTP, the 2025-06-18 handshake, tools/list and tools/call ----------
const MCP_VERSION = "2025-06-18";
let mcp = null; // the server's client, where NODE_AGENT_MCP_URL names one

const mcpFailure = (message, code) => Object.assign(new Error(message), { code });

// The JSON-RPC answer with this id in an SSE body, read as it arrives (null: the stream ended without it).
async function sseAnswer(res, id) {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of res.body) {
    buffered += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffered.search(/\r?\n\r?\n/)) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end).replace(/^\r?\n\r?\n/, "");
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (!data) continue;
      const message = JSON.parse(data);
      if (message.id === id) return message;
    }
  }
  return null;
}

class McpClient {
  constructor(url, timeoutMs) {
    Object.assign(this, { url, timeoutMs, session: null, lost: true, nextId: 1 });
  }

  async connect() {
    this.session = null;
    await this.request("initialize", { protocolVersion: MCP_VERSION, capabilities: {}, clientInfo: { name: "node-agent", version: "1" } });
    await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
    this.lost = false;
  }

  async post(message, signal) {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MCP_VERSION };
    if (this.session) headers["mcp-session-id"] = this.session;
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const res = await fetch(this.url, { method: "POST", headers, body: JSON.stringify(message), signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    this.session = res.headers.get("mcp-session-id") || this.session;
    return res;
  }

  // One request's result. Its failures, by code: "session" (404: the server forgot the session and read
  // nothing), "rpc" (a JSON-RPC error: the server's answer), "lost" (no answer came: the stream cut, the
  // connection gone, no answer in time).
  async request(method, params, signal) {
    if (this.lost && method !== "initialize") await this.connect();
    const id = this.nextId++;
    let answer;
    try {
      const res = await this.post({ jsonrpc: "2.0", id, method, params }, signal);
      if (res.status === 404 && this.session) throw mcpFailure("the MCP server no longer knows the session (404)", "session");
      const type = res.headers.get("content-type") || "";
      answer = type.startsWith("text/event-stream") ? await sseAnswer(res, id) : await res.json();
    } catch (err) {
      if (err.code === "session") throw err;
      throw mcpFailure(`${err.name}: ${err.message}`, "lost");
    }
    if (!answer) throw mcpFailure("the answer's stream ended without it", "lost");
    if (answer.error) throw mcpFailure(`JSON-RPC error ${answer.error.code}: ${answer.error.message}`, "rpc");
    return answer.result;
  }

  // Run a tool at the server: its text, or an Error (the tool's error, or the call's fate unknown). A call
  // the server refused for a forgotten session is sent again on a new one: it never ran. A lost answer is
  // never sent again: the call may have run.
  async call(name, args, signal) {
    for (let again = false; ; again = true) {
      let result;
      try {
        result = await this.request("tools/call", { name, arguments: args }, signal);
      } catch (err) {
        this.lost = err.code !== "rpc";
        if (err.code === "session" && !again) continue;
        throw new Error(`the MCP server's answer ${err.code === "rpc" ? "was an error" : "was lost"} (${err.message}); the call may have run`);
      }
      const text = (result.content || []).map((part) => part.text || "").join("");
      if (result.isError) throw new Error(text);
      return text;
    }
  }
}

// -- the loop: plan, carry out the one effect, commit, plan again --------------------------------------------
async function drive(session, cfg, workspace, identity) {
  const abort = { requested: false, controller: null, child: null };
  process.removeAllListeners("SIGINT");
  process.on("SIGINT", () => {
    abort.requested = true;
    if (abort.controller) abort.controller.abort();
    if (abort.child) {
      try {
        process.kill(-abort.child.pid, "SIGKILL");
      } catch {}
    }
  });
  const state = session.state;
  for (;;) {
    const op = state.operation;
    if (abort.requested && op && !op.abort) {
      const pending = [...op.toolCalls.values()].filter((c) => c.status === "pending");
      const phase = op.kind === "compaction" ? "compact" : pending.length ? "tool" : "model";
      session.commit(["record", { type: "abortRequested", operationId: op.id, operationKind: op.kind, phase, ...(phase === "tool" ? { toolCallId: pending[0].toolCallId } : {}), reason: "escape" }]);
      continue;
    }
    const p = plan(state, cfg.current);
    if (p.type === "blocked") return ["blocked", p.reason];
    if (p.type === "finish") {
      if (op) {
        const body = { type: "operationFinished", operationId: op.id, operationKind: op.kind, outcome: p.outcome };
        if (p.outcome === "completed" && p.finalEntryId) body.finalEntryId = p.finalEntryId;
        if (p.outcome === "completed" && op.kind === "run") body.completion = p.completion;
        if (p.outcome === "failed") body.error = p.error;
        session.commit(["record", body]);
      }
      return [p.outcome, null];
    }
    if (p.type === "closeAttempt") {
      session.commit(["record", { type: "stepFailed", operationId: op.id, stepId: op.step.stepId, attemptId: op.step.attemptId, error: p.error }]);
    } else if (p.type === "appendSynthetic") {
      session.commit(...p.results.map((r) => syntheticFact(op, r)));
    } else if (p.type === "startStep" && p.stale) {
      // The section-8 port wrote its stale step and believed the session went on; the log now breaks.
      session.commit(["record", { type: "stepAttempt", operationId: op.id, stepId: uuid7(), attemptId: uuid7(), stepKind: "assistant", attempt: 1, contextThroughEntryId: p.context, configurationSnapshot: cfg.snapshot, configurationDigest: digest(cfg.snapshot) }]);
      return ["completed", null];
    } else if (p.type === "startStep") {
      await step(session, cfg, p, abort);
    } else if (p.type === "startTool") {
      await tool(session, cfg, p, workspace, identity, abort);
    }
  }
}

function syntheticFact(op, r) {
  const message = { role: "tool", content: SYNTHETIC[r.reason], tool_call_id: r.toolCallId };
  if (r.toolStartedId)
    return ["entry", { type: "message", stepId: op.assistant.stepId, message, toolName: r.toolName, toolStartedId: r.toolStartedId, result: { type: "synthetic", reason: "interrupted" } }, r.resultEntryId];
  return ["entry", { type: "message", stepId: op.assistant.stepId, assistantEntryId: r.assistantEntryId, toolIndex: r.toolIndex, message, toolName: r.toolName, result: { type: "synthetic", reason: r.reason } }];
}

async function step(session, cfg, p, abort) {
  const state = session.state;
  const op = state.operation;
  const stepId = p.stepId || uuid7();
  const attemptId = uuid7();
  session.commit(["record", { type: "stepAttempt", operationId: op.id, stepId, attemptId, stepKind: p.stepKind, attempt: p.attempt, contextThroughEntryId: p.context, configurationSnapshot: cfg.snapshot, configurationDigest: digest(cfg.snapshot) }]);
  const system = op.kind === "compaction" ? COMPACTION_PROMPT : SYSTEM_PROMPT;
  const messages = [{ role: "system", content: system }, ...state.active.map((a) => a.message)];
  abort.controller = new AbortController();
  let answer;
  try {
    answer = await chat(cfg, messages, op.kind === "run", abort.controller.signal);
  } catch (err) {
    abort.controller = null;
    if (abort.requested) return; // the abort closes the attempt
    session.commit(["record", { type: "stepFailed", operationId: op.id, stepId, attemptId, error: { code: err.code || "connection_error", message: String(err.message || err) } }]);
    return;
  } finally {
    abort.controller = null;
  }
  const u = answer.usage || {};
  const cached = (u.prompt_tokens_details || {}).cached_tokens || 0;
  const usage = ["usage", { operationId: op.id, attemptId, usage: { input: (u.prompt_tokens || 0) - cached, output: u.completion_tokens || 0, cacheRead: cached, cacheWrite: 0 } }];
  if (op.kind === "compaction") {
    const kept = new Map(state.active.map((a) => [a.id, a.message]));
    const entry = { type: "compaction", operationId: op.id, summary: answer.content || "", compactedThroughEntryId: op.compacted[op.compacted.length - 1], retainedTail: op.retained.map((id) => ({ sourceEntryId: id, message: kept.get(id) })) };
    session.commit(["entry", entry, op.result], usage);
    return;
  }
  const message = { role: "assistant", content: answer.content || null };
  const calls = answer.calls.filter(Boolean);
  if (calls.length) message.tool_calls = calls;
  session.commit(["entry", { type: "message", stepId, attemptId, stopReason: STOP[answer.finish] || "stop", message }], usage);
}

async function tool(session, cfg, p, workspace, identity, abort) {
  const state = session.state;
  const op = state.operation;
  const a = op.assistant;
  let call = p.call;
  if (p.mode === "start") {
    const declared = cfg.tools[p.toolName];
    const c = a.calls[p.index];
    session.commit(["record", { type: "toolStarted", operationId: op.id, stepId: a.stepId, assistantEntryId: a.id, toolIndex: p.index, toolCallId: c.id, toolName: c.function.name, arguments: p.arguments, replay: declared.replay, replayKey: declared.replayKey, resultEntryId: uuid7(), environmentIdentity: identity }]);
    call = a.started.get(p.index);
  }
  let output;
  let ok = true;
  try {
    output = await runTool(call.toolName, call.arguments, workspace, abort);
  } catch (err) {
    if (abort.requested) return; // interrupted: the abort writes its result
    output = String(err.message || err);
    ok = false;
  }
  session.commit(["entry", { type: "message", stepId: call.stepId, message: { role: "tool", content: output, tool_call_id: call.toolCallId }, toolName: call.toolName, toolStartedId: call.toolStartedId, result: { type: ok ? "success" : "error" } }, call.resultEntryId]);
}

// -- the commands ------------------------------------------------------------------------------------------
async function main(argv) {
  const unknown = [...BUGS].filter((b) => !KNOWN_BUGS.includes(b));
  if (unknown.length) throw new Usage(`NODE_AGENT_BUG: ${unknown.join(", ")} is not one of ${KNOWN_BUGS.join(", ")}`);
  const [command, ...rest] = argv;
  if (process.env.NODE_AGENT_MCP_URL) mcp = new McpClient(process.env.NODE_AGENT_MCP_URL, 1000 * Number(process.env.NODE_AGENT_TIMEOUT || 60));
  const cfg = await configuration();
  if (command === "configuration") {
    process.stdout.write(JSON.stringify(cfg.current) + "\n");
    return 0;
  }
  if (!process.env.NODE_AGENT_BASE_URL) throw new Usage("NODE_AGENT_BASE_URL must be set");
  const workspace = fs.realpathSync(process.cwd());
  const identity = cfg.current.environmentIdentity;
  let session;
  let prompt = null;
  if (command === "start" && rest.length === 1) {
    session = Session.create(workspace, cfg, identity);
    prompt = rest[0];
  } else if ((command === "resume" || command === "compact") && rest.length >= 1) {
    session = Session.open(workspace, rest[0]);
    session.state.recovering = true;
    process.stderr.write(`session: ${session.state.header.id}\n`);
    const [outcome, reason] = await drive(session, cfg, workspace, identity);
    session.state.recovering = false;
    if (outcome === "blocked" || (command === "resume" && rest.length === 1)) return finish(outcome, reason);
    prompt = command === "resume" ? rest[1] : null;
  } else {
    throw new Usage("usage: node agent.js start PROMPT | resume ID [PROMPT] | compact ID | configuration");
  }
  if (command === "start") process.stderr.write(`session: ${session.state.header.id}\n`);
  if (command === "compact") {
    const st = session.state;
    if (st.active.length < 2) return 0;
    const sources = st.active.map((a) => a.id);
    const body = { type: "compactionStarted", operationId: uuid7(), operationKind: "compaction", inputThroughEntryId: st.boundary, resultEntryId: uuid7(), compactedEntryIds: sources, retainedEntryIds: [], sourceDigest: digest(st.active.map((a) => ({ sourceEntryId: a.id, message: a.message }))) };
    session.commit(["record", body]);
  } else {
    const entryId = uuid7();
    session.commit(["entry", { type: "message", message: { role: "user", content: prompt } }, entryId], ["record", { type: "runStarted", operationId: uuid7(), operationKind: "run", inputEntryId: entryId }]);
  }
  return finish(...(await drive(session, cfg, workspace, identity)));
}

function finish(outcome, reason) {
  if (reason) process.stderr.write(`blocked: ${reason}\n`);
  return EXIT[outcome];
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`node agent: ${err.message}\n`);
    process.exit(err instanceof Usage ? 2 : err instanceof Unusable ? 1 : 1);
  },
);
