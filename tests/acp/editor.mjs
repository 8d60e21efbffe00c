// An editor's side of the Agent Client Protocol, on the official TypeScript SDK's client:
// it starts the agent given on its command line (`node editor.mjs rummy acp …`) and lets a
// test drive it, one JSON object per line on stdin and stdout:
//
//   in:  {"id": N, "request": METHOD, "params": {…}}  → out: {"id": N, "result": …}
//                                                         or {"id": N, "error": {code, message, data}}
//   in:  {"notify": METHOD, "params": {…}}              (session/cancel)
//   out: {"update": PARAMS}                             each session/update, in order
//   out: {"permission": K, "params": PARAMS}            a session/request_permission, waiting
//   in:  {"answer": K, "result": {outcome: …}}          its answer
//   out: {"permissionCancelled": K}                     the agent withdrew request K
//   out: {"terminal": "create", "params": PARAMS}       a terminal/create the editor served
//   out: {"exited": CODE, "signal": S}                  the agent ended
//
// With --terminal, it offers a terminal (`clientCapabilities.terminal`) and runs terminal/*
// commands itself (the command and its arguments, no shell between), as an editor's terminal
// would.
import { client, ndJsonStream } from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";

const argv = process.argv.slice(2);
const offersTerminal = argv[0] === "--terminal";
if (offersTerminal) argv.shift();
const [command, ...args] = argv;
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const emit = (message) => process.stdout.write(JSON.stringify(message) + "\n");

const waiting = new Map();
let nextPermission = 0;
const terminals = new Map();
let nextTerminal = 0;

const app = client()
  .onNotification("session/update", ({ params }) => emit({ update: params }))
  .onRequest("session/request_permission", ({ params, signal }) =>
    new Promise((resolve) => {
      const k = nextPermission++;
      waiting.set(k, resolve);
      signal.addEventListener("abort", () => {
        if (waiting.delete(k)) {
          emit({ permissionCancelled: k });
          resolve({ outcome: { outcome: "cancelled" } });
        }
      });
      emit({ permission: k, params });
    }));

if (offersTerminal) {
  app
    .onRequest("terminal/create", ({ params }) => {
      emit({ terminal: "create", params });
      const id = `term_${nextTerminal++}`;
      const child = spawn(params.command, params.args ?? [], {
        cwd: params.cwd ?? undefined,
        env: { ...process.env, ...Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value])) },
      });
      const term = { output: "", exit: null, waiters: [] };
      const take = (chunk) => { term.output += chunk.toString(); };
      child.stdout.on("data", take);
      child.stderr.on("data", take);
      child.on("close", (code, signal) => {
        term.exit = { exitCode: code, signal: signal ?? null };
        for (const w of term.waiters) w(term.exit);
      });
      term.child = child;
      terminals.set(id, term);
      return { terminalId: id };
    })
    .onRequest("terminal/output", ({ params }) => {
      const term = terminals.get(params.terminalId);
      return { output: term.output, truncated: false, exitStatus: term.exit };
    })
    .onRequest("terminal/wait_for_exit", ({ params }) => {
      const term = terminals.get(params.terminalId);
      return term.exit ?? new Promise((resolve) => term.waiters.push(resolve));
    })
    .onRequest("terminal/kill", ({ params }) => {
      terminals.get(params.terminalId)?.child.kill("SIGTERM");
      return {};
    })
    .onRequest("terminal/release", ({ params }) => {
      terminals.get(params.terminalId)?.child.kill("SIGTERM");
      terminals.delete(params.terminalId);
      return {};
    });
}

const connection = app.connect(ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout)));
agent.on("exit", (code, signal) => emit({ exited: code, signal }));

createInterface({ input: process.stdin })
  .on("line", async (line) => {
    const message = JSON.parse(line);
    if (message.request !== undefined) {
      try {
        const result = await connection.agent.request(message.request, message.params);
        emit({ id: message.id, result: result ?? null });
      } catch (e) {
        emit({ id: message.id, error: { code: e.code ?? null, message: String(e.message ?? e), data: e.data ?? null } });
      }
    } else if (message.notify !== undefined) {
      await connection.agent.notify(message.notify, message.params);
    } else if (message.answer !== undefined) {
      const resolve = waiting.get(message.answer);
      waiting.delete(message.answer);
      resolve?.(message.result);
    }
  })
  .on("close", () => {
    connection.close();
    agent.stdin.end();
  });
